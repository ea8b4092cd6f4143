//! Masking of common credential patterns in text written out by `looptune import`.

use regex::Regex;
use std::sync::OnceLock;

/// What a masked credential becomes.
const MASK: &str = "[REDACTED]";

fn patterns() -> &'static [(Regex, &'static str)] {
    static P: OnceLock<Vec<(Regex, &'static str)>> = OnceLock::new();
    P.get_or_init(|| {
        // After the gitleaks rule set (config/gitleaks.toml): the prefixed
        // token formats, JWTs, keyword-anchored secrets such as AWS secret
        // access keys, and credentials in URLs. `\b` cannot be used before a
        // prefix (`MY_sk-...`: `_` is a word character), so a leading group
        // `(^|[^A-Za-z0-9])` is kept and put back with `${1}`.
        const B: &str = r"(^|[^A-Za-z0-9])";
        let specs: Vec<(String, &str)> = vec![
            // PEM private keys first, with or without their END line (a
            // truncated log still leaks the key body).
            (
                r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----(?:[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----|[A-Za-z0-9+/=\s:,-]*)".into(),
                MASK,
            ),
            // JSON Web Tokens (header.payload[.signature]).
            (
                format!(r"{B}eyJ[A-Za-z0-9_-]{{10,}}\.eyJ[A-Za-z0-9_-]{{10,}}\.?[A-Za-z0-9_\-+/=]*"),
                "${1}[REDACTED]",
            ),
            // OpenAI / Anthropic style keys (sk-..., sk-proj-..., sk-ant-...).
            (format!(r"{B}sk-[A-Za-z0-9_\-]{{16,}}"), "${1}[REDACTED]"),
            // Stripe secret and restricted keys.
            (format!(r"{B}(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{{10,}}"), "${1}[REDACTED]"),
            // AWS access key ids.
            (format!(r"{B}(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[0-9A-Z]{{16}}"), "${1}[REDACTED]"),
            // AWS secret access keys: 40 base64 characters after an AWS secret keyword.
            (
                r#"(?i)(aws_?secret_?access_?key|aws_?secret_?key|secret_?access_?key|aws_?secret)(["']?\s*[:=]\s*["']?)[A-Za-z0-9/+=]{40}"#.into(),
                "${1}${2}[REDACTED]",
            ),
            // GitHub tokens.
            (format!(r"{B}gh[pousr]_[A-Za-z0-9]{{30,}}"), "${1}[REDACTED]"),
            (format!(r"{B}github_pat_[A-Za-z0-9_]{{22,}}"), "${1}[REDACTED]"),
            // GitLab, npm, PyPI, Hugging Face tokens.
            (format!(r"{B}glpat-[A-Za-z0-9_\-]{{20,}}"), "${1}[REDACTED]"),
            (format!(r"{B}npm_[A-Za-z0-9]{{36}}"), "${1}[REDACTED]"),
            (format!(r"{B}pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{{50,}}"), "${1}[REDACTED]"),
            (format!(r"{B}hf_[A-Za-z]{{34}}"), "${1}[REDACTED]"),
            // Slack tokens and webhooks.
            (format!(r"{B}xox[abposre]-[A-Za-z0-9\-]{{10,}}"), "${1}[REDACTED]"),
            (
                r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9+/]{20,}".into(),
                MASK,
            ),
            // Google API keys and OAuth access tokens.
            (format!(r"{B}AIza[0-9A-Za-z_\-]{{35}}"), "${1}[REDACTED]"),
            (format!(r"{B}ya29\.[0-9A-Za-z_\-]{{20,}}"), "${1}[REDACTED]"),
            // SendGrid, Shopify, DigitalOcean, Databricks and Twilio keys, Stripe
            // webhook secrets (Anthropic admin keys are `sk-` keys, above).
            (format!(r"{B}SG\.[A-Za-z0-9_\-]{{22}}\.[A-Za-z0-9_\-]{{43}}"), "${1}[REDACTED]"),
            (format!(r"{B}shp(?:at|ca|pa|ss)_[a-fA-F0-9]{{32}}"), "${1}[REDACTED]"),
            (format!(r"{B}do[por]_v1_[a-f0-9]{{64}}"), "${1}[REDACTED]"),
            (format!(r"{B}dapi[a-f0-9]{{32}}(?:-\d)?"), "${1}[REDACTED]"),
            (format!(r"{B}SK[0-9a-fA-F]{{32}}"), "${1}[REDACTED]"),
            (format!(r"{B}whsec_[A-Za-z0-9+/=]{{24,}}"), "${1}[REDACTED]"),
            // Passwords in URLs (scheme://user:password@host): the user is kept.
            (
                r"(?i)\b([a-z][a-z0-9+.\-]*://[^\s:/@]*:)[^\s@/]+@".into(),
                "${1}[REDACTED]@",
            ),
            // Bearer and Basic credentials in headers; the scheme word is kept.
            (
                r"(?i)\b(bearer)\s+[A-Za-z0-9\-._~+/]{16,}=*".into(),
                "$1 [REDACTED]",
            ),
            (
                r"(?i)(authorization[\x22']?\s*[:=]\s*[\x22']?basic)\s+[A-Za-z0-9+/]{8,}=*".into(),
                "$1 [REDACTED]",
            ),
            // Generic assignments to secret-named keys (gitleaks' generic-api-key,
            // narrowed to an explicit `=` or `:` and 8+ characters).
            (
                r#"(?i)\b((?:api|access|auth|secret|private|client)[_-]?(?:key|token|secret)|password|passwd|pwd)(["']?\s*[:=]\s*["']?)[^\s"',;]{8,}"#.into(),
                "${1}${2}[REDACTED]",
            ),
        ];
        specs
            .iter()
            .map(|(p, r)| (Regex::new(p).expect("valid credential pattern"), *r))
            .collect()
    })
}

/// `text` with credentials replaced by `[REDACTED]`: API keys and tokens
/// (`sk-…`, `AKIA…`, `ghp_…`, `xox…`, `AIza…`, `glpat-…`, ...), JWTs, AWS
/// secret access keys, passwords in URLs, bearer tokens, secret-named
/// assignments and PEM private key blocks (with or without their END line).
pub fn redact(text: &str) -> String {
    let mut out = std::borrow::Cow::Borrowed(text);
    for (re, rep) in patterns() {
        if re.is_match(&out) {
            out = std::borrow::Cow::Owned(re.replace_all(&out, *rep).into_owned());
        }
    }
    out.into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_common_credentials() {
        let cases = [
            (
                "key sk-ant-api03-abcdefghijklmnopqrstuv end",
                "key [REDACTED] end",
            ),
            ("AKIAABCDEFGHIJKLMNOP", "[REDACTED]"),
            ("t=ghp_abcdefghijklmnopqrstuvwxyz0123456789", "t=[REDACTED]"),
            ("xoxb-1234567890-abcdef", "[REDACTED]"),
            ("AIzaSyA1234567890abcdefghijklmnopqrstuv", "[REDACTED]"),
            (
                "Authorization: Bearer abcdefghijklmnop.qrstuv",
                "Authorization: Bearer [REDACTED]",
            ),
            (
                "a\n-----BEGIN RSA PRIVATE KEY-----\nMIIE\nxyz\n-----END RSA PRIVATE KEY-----\nb",
                "a\n[REDACTED]\nb",
            ),
        ];
        for (input, want) in cases {
            assert_eq!(redact(input), want, "{input}");
        }
        assert_eq!(redact("sk-short and plain text"), "sk-short and plain text");
    }

    /// The leaks issue #16 found, one per rule family.
    #[test]
    fn masks_what_the_issue_found_in_clear() {
        let jwt = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";
        let cases = [
            (format!("token {jwt} end"), "token [REDACTED] end".to_string()),
            (
                "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY".into(),
                "aws_secret_access_key = [REDACTED]".into(),
            ),
            (
                "AWS_SECRET_ACCESS_KEY=\"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\"".into(),
                "AWS_SECRET_ACCESS_KEY=\"[REDACTED]\"".into(),
            ),
            (
                "git clone https://bob:hunter2secret@example.com/r.git".into(),
                "git clone https://bob:[REDACTED]@example.com/r.git".into(),
            ),
            (
                "postgres://admin:p4ss@db:5432/x".into(),
                "postgres://admin:[REDACTED]@db:5432/x".into(),
            ),
            (
                "key:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nAAAABG5vbmUAAAAEbm9uZQ".into(),
                "key:\n[REDACTED]".into(),
            ),
            (
                "OPENAI_API_KEY_sk-proj-abcdefghijklmnopqrstuv".into(),
                "OPENAI_API_KEY_[REDACTED]".into(),
            ),
            (
                "export MY_TOKEN=glpat-abcdefghij0123456789".into(),
                "export MY_TOKEN=[REDACTED]".into(),
            ),
            (
                "password: correct-horse-battery".into(),
                "password: [REDACTED]".into(),
            ),
            (
                "Authorization: Basic dXNlcjpwYXNzd29yZA==".into(),
                "Authorization: Basic [REDACTED]".into(),
            ),
            (
                "ya29.a0AfH6SMBabcdefghijklmnopqrstu".into(),
                "[REDACTED]".into(),
            ),
            (
                format!("k={}", "shpat_0123456789abcdef0123456789abcdef"),
                "k=[REDACTED]".into(),
            ),
            (
                format!("SG.{}.{}", "a".repeat(22), "b".repeat(43)),
                "[REDACTED]".into(),
            ),
            (
                format!("DO_TOKEN:dop_v1_{}", "0".repeat(64)),
                "DO_TOKEN:[REDACTED]".into(),
            ),
        ];
        for (input, want) in cases {
            assert_eq!(redact(&input), want, "{input}");
        }
        // Ordinary prose and code survive.
        for keep in [
            "max_tokens: 4096",
            "see https://example.com/a:b@c",
            "the password field is required",
            "ask-for-help",
        ] {
            assert_eq!(redact(keep), keep);
        }
    }
}
