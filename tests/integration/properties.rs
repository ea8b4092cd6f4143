//! Property tests for the entry points hostile input reaches first (the same
//! ones the cargo-fuzz targets in `fuzz/` exercise at length): the canonical
//! reader, native import, grids and labels never panic, and their errors name
//! the file and, for line-oriented input, a line that exists.

use looptune::error::Error;
use proptest::prelude::*;

/// One line of something like a canonical or native log: mostly well-formed
/// records with odd values, sometimes damaged, sometimes noise.
fn log_line() -> impl Strategy<Value = String> {
    let text = "[a-zA-Z0-9 \\\\\"\u{7f}\u{202e}\u{1f600}\n\t`<>&]{0,40}";
    let kind = prop::sample::select(vec![
        "user",
        "content",
        "thought",
        "tool_call",
        "tool_result",
        "turn",
        "session",
        "usage",
        "judge",
        "loop_detected",
        "label",
        "mystery",
        "assistant",
        "message",
        "response_item",
    ]);
    prop_oneof![
        4 => (kind.clone(), text, any::<i64>(), any::<bool>()).prop_map(|(k, t, n, b)| {
            serde_json::json!({
                "type": k, "text": t, "name": t, "args": {"a": n, t.clone(): b},
                "session": t, "loop": b, "onset_turn": n, "confidence": n,
                "input_tokens": n, "id": n, "output": t,
            })
            .to_string()
        }),
        1 => (kind, any::<u8>()).prop_map(|(k, cut)| {
            let s = format!("{{\"type\":\"{k}\",\"text\":\"abc\",\"args\":{{}}}}");
            s[..(cut as usize % s.len())].to_string()
        }),
        1 => "[ -~]{0,30}",
        1 => Just(String::new()),
    ]
}

fn log_text() -> impl Strategy<Value = String> {
    prop::collection::vec(log_line(), 0..12).prop_map(|l| l.join("\n"))
}

/// A `Line` error must point into the input; other errors must name the file.
fn check_error(e: &Error, display: &str, text: &[u8]) {
    let lines = text.split(|b| *b == b'\n').count() as u64;
    match e {
        Error::Line { path, line, .. } => {
            assert_eq!(path, display);
            assert!(
                *line >= 1 && *line <= lines.max(1),
                "line {line} of {lines}"
            );
        }
        Error::File { path, .. } => assert_eq!(path, display),
        other => assert!(other.to_string().contains(display), "{other}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn canonical_reader_never_panics_and_names_a_line(text in log_text(), lenient in any::<bool>()) {
        match looptune::input::parse_canonical("f.jsonl", "f", text.as_bytes(), lenient) {
            Ok(fs) => {
                for skip in &fs.skipped {
                    prop_assert!(skip.line >= 1);
                }
            }
            Err(e) => check_error(&e, "f.jsonl", text.as_bytes()),
        }
    }

    #[test]
    fn canonical_reader_survives_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        if let Err(e) = looptune::input::parse_canonical("f.jsonl", "f", &bytes, true) {
            check_error(&e, "f.jsonl", &bytes);
        }
    }

    /// Gemini CLI telemetry files (pretty-printed records), cut and damaged:
    /// no panic, and a bad record is named by a line of the file.
    #[test]
    fn telemetry_import_never_panics_and_names_a_line(
        names in prop::collection::vec(prop::sample::select(vec![
            "gemini_cli.tool_call", "gemini_cli.api_request", "gemini_cli.user_prompt",
            "loop_detected", "gemini_cli.api_response", "other",
        ]), 1..6),
        args in "[a-z{}\"\\:,]{0,12}",
        cut in any::<u16>(),
        lenient in any::<bool>(),
    ) {
        let mut text = String::new();
        for (i, n) in names.iter().enumerate() {
            let rec = serde_json::json!({"attributes": {"session.id": "s", "event.name": n,
                "function_name": "read_file", "function_args": args, "success": i % 2 == 0,
                "count": i, "confidence": "0.5", "loop_type": "x"}});
            text.push_str(&serde_json::to_string_pretty(&rec).unwrap());
            text.push('\n');
        }
        let bytes = &text.as_bytes()[..(cut as usize % (text.len() + 1))];
        for r in [
            looptune::input::import::import_as("gemini-telemetry", "t.log", "t", bytes, lenient),
            looptune::input::import::import_auto("t.log", "t", bytes, lenient),
        ] {
            if let Err(e) = r {
                check_error(&e, "t.log", bytes);
            }
        }
    }

    #[test]
    fn native_import_never_panics(text in log_text(), lenient in any::<bool>()) {
        if let Err(e) = looptune::input::import::import_auto("n.jsonl", "n", text.as_bytes(), lenient) {
            check_error(&e, "n.jsonl", text.as_bytes());
        }
        for format in looptune::input::import::format_names() {
            let _ = looptune::input::import::import_as(format, "n.json", "n", text.as_bytes(), lenient);
        }
    }

    #[test]
    fn grids_never_panic_and_errors_name_the_grid(
        axes in prop::collection::vec(
            (
                prop::sample::select(vec!["tool_call_threshold", "content_chunk_size", "content_loop_threshold", "content_max_distance_factor", "bogus"]),
                prop_oneof![
                    (any::<i64>(), any::<i64>(), any::<i64>()).prop_map(|(a, b, s)| format!("{{ start = {a}, stop = {b}, step = {s} }}")),
                    (-5.0f64..1e6, -5.0f64..1e6, -1.0f64..10.0).prop_map(|(a, b, s)| format!("{{ start = {a:?}, stop = {b:?}, step = {s:?} }}")),
                    prop::collection::vec(any::<i64>(), 0..4).prop_map(|v| format!("{v:?}")),
                    "[ -~]{0,12}",
                ],
            ),
            0..4,
        ),
        family in prop::sample::select(vec!["gemini", "opencode", "nope", "blade"]),
    ) {
        let mut text = format!("family = \"{family}\"\nstock_profiles = false\n[axes]\n");
        for (name, value) in &axes {
            text.push_str(&format!("{name} = {value}\n"));
        }
        if let Err(e) = looptune::sweep::grid::parse_grid_limited(&text, "g.toml", 1000) {
            prop_assert!(e.to_string().starts_with("grid g.toml") || e.to_string().contains("unknown detector family"), "{}", e);
        }
    }

    #[test]
    fn labels_never_panic_and_errors_name_a_line(
        rows in prop::collection::vec(
            (
                "[a-z0-9_\\-=+@\"]{0,8}",
                prop::sample::select(vec!["loop", "clean", "maybe", ""]),
                prop_oneof!["[0-9]{0,3}", "-1", "x", Just(String::new())],
            ),
            0..8,
        ),
        jsonl in any::<bool>(),
        lenient in any::<bool>(),
    ) {
        let text = if jsonl {
            rows.iter()
                .map(|(s, l, o)| serde_json::json!({"session": s, "label": l, "onset_turn": o}).to_string())
                .collect::<Vec<_>>()
                .join("\n")
        } else {
            let mut t = String::from("session,label,onset_turn\n");
            for (s, l, o) in &rows {
                t.push_str(&format!("{s},{l},{o}\n"));
            }
            t
        };
        let mut warnings = Vec::new();
        let syntax = if jsonl {
            looptune::input::labels::LabelsSyntax::Jsonl
        } else {
            looptune::input::labels::LabelsSyntax::Csv
        };
        if let Err(e) = looptune::input::labels::parse_labels("l.csv", &text, syntax, lenient, &mut warnings) {
            check_error(&e, "l.csv", text.as_bytes());
        }
    }
}
