//! `looptune import --redact` on what issue #42's probe found in clear
//! (item 18): a PEM key streamed over two `content` chunks, a Telegram bot
//! token in a Bot API URL, an AWS key id written with its secret.

use crate::util::{run, write};

/// A 13-line PEM key (BEGIN, 11 body lines, END), one line a string.
fn key_lines() -> Vec<String> {
    let mut k = vec!["-----BEGIN PRIVATE KEY-----".to_string()];
    for i in 0..11 {
        k.push(format!("MIIEv{i:02}{}", "QIBADANBgkqhkiG9w0B+/x".repeat(3)));
    }
    k.push("-----END PRIVATE KEY-----".into());
    k
}

#[test]
fn import_redact_masks_split_keys_bot_urls_and_key_pairs() {
    let dir = tempfile::tempdir().unwrap();
    let lines = key_lines();
    // The probe's split: BEGIN and six lines, then five lines and END.
    let first = format!("Here is the key:\n{}\n", lines[..7].join("\n"));
    let second = format!("{}\nStore it safely.", lines[7..].join("\n"));
    let token = "987654321:AAF3kz9Qw3ErTy6Ui0Op5As4Df8Gh2Jk1Lm";
    let secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
    let records = [
        serde_json::json!({"type": "session", "session": "s1", "agent": "codex"}),
        serde_json::json!({"type": "user", "session": "s1", "text": "show me the key"}),
        serde_json::json!({"type": "turn", "session": "s1"}),
        serde_json::json!({"type": "content", "session": "s1", "text": first}),
        serde_json::json!({"type": "content", "session": "s1", "text": second}),
        serde_json::json!({"type": "turn", "session": "s1"}),
        serde_json::json!({"type": "content", "session": "s1",
            "text": format!("curl https://api.telegram.org/bot{token}/getMe")}),
        serde_json::json!({"type": "content", "session": "s1",
            "text": format!("export CREDS=AKIAIOSFODNN7EXAMPLE:{secret}")}),
    ];
    let text: String = records.iter().map(|r| format!("{r}\n")).collect();
    let input = write(dir.path(), "in.jsonl", &text);
    let out = dir.path().join("out.jsonl");
    let r = run(&[
        "import",
        "--redact",
        input.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(
        r.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
    let written = std::fs::read_to_string(&out).unwrap();
    let mut leaked: Vec<&str> = lines[1..].iter().map(String::as_str).collect();
    leaked.extend(["987654321:AAF3", secret, "AKIAIOSFODNN7EXAMPLE"]);
    leaked.retain(|s| written.contains(s));
    assert!(leaked.is_empty(), "in clear: {leaked:?}\n{written}");
    // What is around the secrets is kept.
    for kept in [
        "Here is the key:\\n[REDACTED]",
        "[REDACTED]\\nStore it safely.",
        "https://api.telegram.org/bot[REDACTED]/getMe",
        "export CREDS=[REDACTED]:[REDACTED]",
    ] {
        assert!(written.contains(kept), "{kept} not in {written}");
    }
}
