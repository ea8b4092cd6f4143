//! Masking of common credential patterns in text written out by `looptune import`.

use regex::Regex;
use std::sync::OnceLock;

/// What a masked credential becomes.
const MASK: &str = "[REDACTED]";

fn patterns() -> &'static [(Regex, &'static str)] {
    static P: OnceLock<Vec<(Regex, &'static str)>> = OnceLock::new();
    P.get_or_init(|| {
        let specs: &[(&str, &str)] = &[
            // PEM private keys first: their bodies would otherwise match nothing useful.
            (
                r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY-----",
                MASK,
            ),
            // OpenAI / Anthropic style keys (sk-..., sk-proj-..., sk-ant-...).
            (r"\bsk-[A-Za-z0-9_\-]{16,}", MASK),
            // AWS access key ids.
            (r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b", MASK),
            // GitHub tokens.
            (r"\bgh[pousr]_[A-Za-z0-9]{30,}", MASK),
            (r"\bgithub_pat_[A-Za-z0-9_]{22,}", MASK),
            // Slack tokens.
            (r"\bxox[abposr]-[A-Za-z0-9\-]{10,}", MASK),
            // Google API keys.
            (r"\bAIza[0-9A-Za-z_\-]{35}", MASK),
            // Bearer tokens in headers; the scheme word is kept.
            (
                r"(?i)\b(bearer)\s+[A-Za-z0-9\-._~+/]{16,}=*",
                "$1 [REDACTED]",
            ),
        ];
        specs
            .iter()
            .map(|(p, r)| (Regex::new(p).expect("valid credential pattern"), *r))
            .collect()
    })
}

/// `text` with API keys (`sk-…`, `AKIA…`, `ghp_…`, `xox…`, `AIza…`), bearer
/// tokens and PEM private key blocks replaced by `[REDACTED]`.
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
}
