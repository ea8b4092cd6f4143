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
            // SendGrid: `SG.` and 66 characters (dots included).
            (format!(r"{B}SG\.[A-Za-z0-9=_\-.]{{66}}"), "${1}[REDACTED]"),
            (format!(r"{B}shp(?:at|ca|pa|ss)_[a-fA-F0-9]{{32}}"), "${1}[REDACTED]"),
            (format!(r"{B}do[por]_v1_[a-f0-9]{{64}}"), "${1}[REDACTED]"),
            (format!(r"{B}dapi[a-f0-9]{{32}}(?:-\d)?"), "${1}[REDACTED]"),
            (format!(r"{B}SK[0-9a-fA-F]{{32}}"), "${1}[REDACTED]"),
            (format!(r"{B}whsec_[A-Za-z0-9+/=]{{24,}}"), "${1}[REDACTED]"),
            // Heroku: a UUID assigned to a heroku-named key (the key is
            // kept), and the `HRKU-AA` tokens.
            (
                r#"(?i)(heroku[\w.-]{0,20}[\s'"]{0,3}(?:=|:=|=>|:)[\s'"`]{0,5})[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"#.into(),
                "${1}[REDACTED]",
            ),
            (format!(r"{B}HRKU-AA[0-9A-Za-z_\-]{{58}}"), "${1}[REDACTED]"),
            // Azure storage account keys and shared access keys in
            // connection strings (the key name is kept).
            (r"(?i)(AccountKey=)[A-Za-z0-9+/]{86}==".into(), "${1}[REDACTED]"),
            (r"(?i)(SharedAccessKey=)[A-Za-z0-9+/]{42,43}=".into(), "${1}[REDACTED]"),
            // More prefixed formats of gitleaks' rule set: GitLab's other
            // tokens, Slack app tokens, age, Doppler, Postman, Linear,
            // HashiCorp Vault and Terraform, Docker, Grafana, PlanetScale,
            // RubyGems, Square, Groq, Perplexity, Hugging Face org, Atlassian,
            // Fly.io, 1Password service accounts, Airtable, Cloudflare origin
            // CA, Adobe, New Relic, Brevo, Pulumi, Prefect, ReadMe, Scalingo,
            // Duffel, EasyPost, Frame.io, Flutterwave, Shippo, Typeform,
            // Clojars, Infracost, Harness, Sentry.
            (format!(r"{B}gl(?:ptt|dt|rt|cbt|ft|soat|imt|agent)-[A-Za-z0-9_\-]{{20,}}"), "${1}[REDACTED]"),
            (format!(r"{B}xapp-\d-[A-Z0-9]+-\d+-[a-z0-9]+"), "${1}[REDACTED]"),
            (format!(r"{B}AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{{58}}"), "${1}[REDACTED]"),
            (format!(r"(?i){B}dp\.(?:pt|st|sa|ct|scim|audit)\.[a-z0-9]{{40,44}}"), "${1}[REDACTED]"),
            (format!(r"(?i){B}PMAK-[a-f0-9]{{24}}-[a-f0-9]{{34}}"), "${1}[REDACTED]"),
            (format!(r"(?i){B}lin_api_[a-z0-9]{{40}}"), "${1}[REDACTED]"),
            (format!(r"{B}hv[sb]\.[A-Za-z0-9_\-]{{90,300}}"), "${1}[REDACTED]"),
            (format!(r"(?i){B}[a-z0-9]{{14}}\.atlasv1\.[a-z0-9\-_=]{{60,70}}"), "${1}[REDACTED]"),
            (format!(r"{B}dckr_pat_[A-Za-z0-9_\-]{{27,}}"), "${1}[REDACTED]"),
            (format!(r"{B}glc_[A-Za-z0-9+/]{{32,400}}={{0,2}}"), "${1}[REDACTED]"),
            (format!(r"{B}glsa_[A-Za-z0-9]{{32}}_[A-Fa-f0-9]{{8}}"), "${1}[REDACTED]"),
            (format!(r"(?i){B}pscale_(?:tkn|pw|oauth)_[\w=.\-]{{32,64}}"), "${1}[REDACTED]"),
            (format!(r"{B}rubygems_[a-f0-9]{{48}}"), "${1}[REDACTED]"),
            (format!(r"{B}(?:EAAA|sq0atp-)[0-9A-Za-z_\-]{{22,60}}"), "${1}[REDACTED]"),
            (format!(r"{B}sq0csp-[0-9A-Za-z_\-]{{43}}"), "${1}[REDACTED]"),
            (format!(r"{B}gsk_[A-Za-z0-9]{{52}}"), "${1}[REDACTED]"),
            (format!(r"{B}pplx-[A-Za-z0-9]{{48}}"), "${1}[REDACTED]"),
            (format!(r"{B}api_org_[A-Za-z]{{34}}"), "${1}[REDACTED]"),
            (format!(r"{B}ATATT3[A-Za-z0-9_\-=]{{186}}"), "${1}[REDACTED]"),
            (format!(r"{B}fo1_[\w\-]{{43}}"), "${1}[REDACTED]"),
            (format!(r"{B}fm[12][ar]?_[A-Za-z0-9+/]{{100,}}={{0,3}}"), "${1}[REDACTED]"),
            (format!(r"{B}ops_eyJ[A-Za-z0-9+/]{{250,}}={{0,3}}"), "${1}[REDACTED]"),
            (format!(r"{B}pat[A-Za-z0-9]{{14}}\.[a-f0-9]{{64}}"), "${1}[REDACTED]"),
            (format!(r"{B}v1\.0-[a-f0-9]{{24}}-[a-f0-9]{{146}}"), "${1}[REDACTED]"),
            (format!(r"(?i){B}p8e-[a-z0-9]{{32}}"), "${1}[REDACTED]"),
            (format!(r"(?i){B}NRAK-[a-z0-9]{{27}}"), "${1}[REDACTED]"),
            (format!(r"{B}xkeysib-[a-f0-9]{{64}}-[A-Za-z0-9]{{16}}"), "${1}[REDACTED]"),
            (format!(r"{B}pul-[a-f0-9]{{40}}"), "${1}[REDACTED]"),
            (format!(r"(?i){B}pnu_[a-z0-9]{{36}}"), "${1}[REDACTED]"),
            (format!(r"(?i){B}rdme_[a-z0-9]{{70}}"), "${1}[REDACTED]"),
            (format!(r"{B}tk-us-[\w\-]{{48}}"), "${1}[REDACTED]"),
            (format!(r"(?i){B}duffel_(?:test|live)_[a-z0-9_\-=]{{43}}"), "${1}[REDACTED]"),
            (format!(r"(?i){B}EZAK[a-z0-9]{{54}}"), "${1}[REDACTED]"),
            (format!(r"(?i){B}fio-u-[a-z0-9\-_=]{{64}}"), "${1}[REDACTED]"),
            (format!(r"(?i){B}FLWSECK_TEST-[a-h0-9]{{32}}-X"), "${1}[REDACTED]"),
            (format!(r"(?i){B}shippo_(?:live|test)_[a-f0-9]{{40}}"), "${1}[REDACTED]"),
            (format!(r"(?i){B}tfp_[a-z0-9\-_.=]{{59}}"), "${1}[REDACTED]"),
            (format!(r"(?i){B}CLOJARS_[a-z0-9]{{60}}"), "${1}[REDACTED]"),
            (format!(r"{B}ico-[A-Za-z0-9]{{32}}"), "${1}[REDACTED]"),
            (format!(r"{B}(?:pat|sat)\.[A-Za-z0-9_\-]{{22}}\.[A-Za-z0-9]{{24}}\.[A-Za-z0-9]{{20}}"), "${1}[REDACTED]"),
            (format!(r"{B}sntr[ysu]s?_[A-Za-z0-9=_+/]{{40,}}"), "${1}[REDACTED]"),
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
            // The key may carry a prefix (`DATABASE_PASSWORD`: `\b` alone
            // never matched inside one identifier).
            (
                r#"(?i)\b([\w.-]*?(?:(?:api|access|auth|secret|private|client)[_-]?(?:key|token|secret)|password|passwd|pwd))(["']?\s*[:=]\s*["']?)[^\s"',;]{8,}"#.into(),
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

    /// The four kinds issue #31 found in clear, as the issue gave them.
    #[test]
    fn masks_what_issue_31_found_in_clear() {
        let sg = format!("SG.{}", "aB3-_x.Yz9".repeat(6) + "Qw12Er");
        assert_eq!(sg.len(), 69);
        let azure = format!(
            "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={}==;EndpointSuffix=core.windows.net",
            "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw"
        );
        let cases = [
            (format!("key {sg} end"), "key [REDACTED] end".to_string()),
            (
                "HEROKU_API_KEY=832d2129-a846-4e27-99f4-7004b6ad53ef".into(),
                "HEROKU_API_KEY=[REDACTED]".into(),
            ),
            (
                r#"const HEROKU_KEY = "63866443-cb87-446f-8bf0-80e9be787301""#.into(),
                r#"const HEROKU_KEY = "[REDACTED]""#.into(),
            ),
            (
                azure.clone(),
                "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=[REDACTED];EndpointSuffix=core.windows.net".into(),
            ),
            (
                "DATABASE_PASSWORD=xK9#mP2$vL7@qR4".into(),
                "DATABASE_PASSWORD=[REDACTED]".into(),
            ),
            (
                "export db.admin_pwd: 'hunter2-hunter2'".into(),
                "export db.admin_pwd: '[REDACTED]'".into(),
            ),
        ];
        for (input, want) in cases {
            assert_eq!(redact(&input), want, "{input}");
        }
    }

    /// One example of each further prefixed rule, in the shape gitleaks'
    /// own samples take (prefix and character class at the rule's length).
    #[test]
    fn masks_each_further_prefixed_rule() {
        let r = |c: &str, n: usize| c.repeat(n.div_ceil(c.len()))[..n].to_string();
        let samples = [
            format!("glptt-{}", r("a1B2", 40)),
            "xapp-1-A0123BCDEF-1234567890123-abcdef0123456789".into(),
            format!("AGE-SECRET-KEY-1{}", r("QPZRY9X8GF", 58)),
            format!("dp.pt.{}", r("a1b2c3", 43)),
            format!("PMAK-{}-{}", r("a1f2", 24), r("b3c4", 34)),
            format!("lin_api_{}", r("a1z9", 40)),
            format!("hvs.{}", r("Ab1_-", 95)),
            format!("{}.atlasv1.{}", r("a1b2", 14), r("x9y8", 64)),
            format!("dckr_pat_{}", r("Ab1_", 27)),
            format!("glc_{}", r("eyJr", 40)),
            format!("glsa_{}_{}", r("Ab12", 32), r("ab12", 8)),
            format!("pscale_tkn_{}", r("Ab1_", 40)),
            format!("rubygems_{}", r("a1f2", 48)),
            format!("sq0atp-{}", r("Ab1_", 22)),
            format!("sq0csp-{}", r("Ab1_", 43)),
            format!("gsk_{}", r("Ab12", 52)),
            format!("pplx-{}", r("Ab12", 48)),
            format!("api_org_{}", r("AbCd", 34)),
            format!("ATATT3{}", r("Ab1_", 186)),
            format!("fo1_{}", r("Ab1_", 43)),
            format!("fm2_{}", r("Ab1+", 120)),
            format!("ops_eyJ{}", r("Ab1+", 260)),
            format!("pat{}.{}", r("Ab12", 14), r("a1f2", 64)),
            format!("v1.0-{}-{}", r("a1f2", 24), r("b3c4", 146)),
            format!("p8e-{}", r("a1z9", 32)),
            format!("NRAK-{}", r("A1Z9", 27)),
            format!("xkeysib-{}-{}", r("a1f2", 64), r("Ab12", 16)),
            format!("pul-{}", r("a1f2", 40)),
            format!("pnu_{}", r("a1z9", 36)),
            format!("rdme_{}", r("a1z9", 70)),
            format!("tk-us-{}", r("Ab1_", 48)),
            format!("duffel_test_{}", r("a1_-", 43)),
            format!("EZAK{}", r("a1z9", 54)),
            format!("fio-u-{}", r("a1_-", 64)),
            format!("FLWSECK_TEST-{}-X", r("a1h2", 32)),
            format!("shippo_live_{}", r("a1f2", 40)),
            format!("tfp_{}", r("a1_.", 59)),
            format!("CLOJARS_{}", r("a1z9", 60)),
            format!("ico-{}", r("Ab12", 32)),
            format!("pat.{}.{}.{}", r("Ab1_", 22), r("Ab12", 24), r("Ab12", 20)),
            format!("sntrys_{}", r("eyJ0", 60)),
            format!("HRKU-AA{}", r("Ab1_", 58)),
            format!(
                "Endpoint=sb://x/;SharedAccessKeyName=k;SharedAccessKey={}=",
                r("Ab1+", 43)
            ),
        ];
        for secret in samples {
            let out = redact(&format!("x {secret} y"));
            assert!(out.contains("[REDACTED]"), "{secret}: {out}");
            assert!(!out.contains(&secret), "{secret} left in clear: {out}");
        }
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
            "heroku_dyno = web.1",
            "AccountKey=short",
            "sq0atp-short",
            "max_tokens: 4096",
            "see https://example.com/a:b@c",
            "the password field is required",
            "ask-for-help",
        ] {
            assert_eq!(redact(keep), keep);
        }
    }
}
