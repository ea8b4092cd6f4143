//! Edge cases of the importers on small hand-made fixtures in
//! `tests/fixtures/import/`: missing fields, empty sessions, unknown record types, a
//! subagent file without its parent, resume copies, clashing stems, walked
//! files nobody recognises, and the two formats without corpus data.

use looptune::event::{Corpus, Record, Session, Skip};
use looptune::input::{read_corpus, ReadOptions};
use std::path::PathBuf;
use std::sync::Arc;

fn fx(p: &str) -> PathBuf {
    PathBuf::from("tests/fixtures/import").join(p)
}

fn read(paths: &[&str], lenient: bool) -> looptune::error::Result<Corpus> {
    let paths: Vec<PathBuf> = paths.iter().map(|p| fx(p)).collect();
    read_corpus(
        &paths,
        &ReadOptions {
            lenient,
            ..Default::default()
        },
    )
}

fn types(s: &Session) -> Vec<&str> {
    s.events.iter().map(|e| e.record.type_name()).collect()
}

fn only(c: &Corpus) -> &Arc<Session> {
    assert_eq!(
        c.sessions.len(),
        1,
        "{:?}",
        c.sessions.iter().map(|s| &s.id).collect::<Vec<_>>()
    );
    &c.sessions[0]
}

#[test]
fn claude_bad_block_list_is_a_line_error_or_a_counted_skip() {
    let e = read(&["claude-edge.jsonl"], false).unwrap_err().to_string();
    assert_eq!(
        e,
        "tests/fixtures/import/claude-edge.jsonl:7: field `message.content` must be an array"
    );
    let c = read(&["claude-edge.jsonl"], true).unwrap();
    assert_eq!(c.files[0].format, "claude-code");
    assert_eq!(c.files[0].skipped_lines, 1);
    assert_eq!(c.files[0].unknown_records, 1);
    let s = only(&c);
    assert_eq!(s.id, "claude-edge");
    // Slash-command echo and the repeated uuid produce nothing.
    assert_eq!(
        types(s),
        vec![
            "session",
            "session",
            "user",
            "turn",
            "content",
            "tool_call",
            "tool_result"
        ]
    );
    assert_eq!(s.meta.mode.as_deref(), Some("plan"));
    assert_eq!(s.meta.model.as_deref(), Some("claude-x"));
    assert_eq!(
        s.events[6].record,
        Record::ToolResult {
            id: Some("t1".into()),
            name: Some("Bash".into()),
            output: Some("a.txt\n[image]".into()),
            error: Some(false)
        }
    );
    assert_eq!(s.events[6].origin.line, 5);
    assert!(s.whole_messages);
}

#[test]
fn claude_file_with_only_a_summary_has_no_session() {
    let c = read(&["claude-empty.jsonl"], false).unwrap();
    assert_eq!(c.files.len(), 1);
    assert_eq!(c.files[0].format, "claude-code");
    assert!(c.sessions.is_empty());
}

#[test]
fn subagent_file_without_its_parent() {
    let c = read(&["subagent-only"], false).unwrap();
    let s = only(&c);
    assert_eq!(s.id, "agent-deadbeef");
    assert_eq!(s.meta.meta["parent_session"], "parent-0001");
    assert_eq!(s.meta.meta["agent_id"], "deadbeef");
    assert_eq!(s.turns, 1);
    assert_eq!(
        types(s),
        vec!["session", "user", "turn", "content", "usage"]
    );
}

#[test]
fn claude_resume_copies_merge_and_unrelated_namesakes_are_told_apart() {
    let c = read(&["resume"], false).unwrap();
    let ids: Vec<(&str, u32, usize)> = c
        .sessions
        .iter()
        .map(|s| (s.id.as_str(), s.turns, s.events.len()))
        .collect();
    // A: session, user, turn, content (the copy in B.jsonl adds nothing).
    assert_eq!(ids, vec![("A", 1, 4), ("B", 1, 4)]);
    let c = read(&["resume", "resume-other"], false).unwrap();
    let ids: Vec<&str> = c.sessions.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, vec!["B", "resume-other/A", "resume/A"]);
}

#[test]
fn gemini_empty_recording_is_an_empty_session() {
    let c = read(&["gemini-empty.json"], false).unwrap();
    let s = only(&c);
    assert_eq!(s.id, "gemini-empty");
    assert_eq!(s.turns, 0);
    assert_eq!(types(s), vec!["session"]);
}

#[test]
fn gemini_missing_fields_loop_notices_and_unknown_types() {
    let e = read(&["gemini-missing.json"], false)
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "tests/fixtures/import/gemini-missing.json:11: missing field `messages[6].type`"
    );
    let c = read(&["gemini-missing.json"], true).unwrap();
    assert_eq!(c.files[0].skipped_lines, 1);
    assert_eq!(c.files[0].unknown_records, 1);
    let s = only(&c);
    assert_eq!(
        types(s),
        vec![
            "session",
            "user",
            "turn",
            "tool_call",
            "turn",
            "loop_detected",
            "loop_detected"
        ]
    );
    assert_eq!(s.turns, 2);
    match (&s.events[5].record, &s.events[6].record) {
        (Record::LoopDetected { kind: a, .. }, Record::LoopDetected { kind: b, detail }) => {
            assert_eq!(a.as_deref(), Some("gemini-cli"));
            assert_eq!(b.as_deref(), Some("gemini-cli-recovery"));
            assert_eq!(detail.as_deref(), Some("repeated tool calls"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(s.events[1].origin.line, 5);
}

#[test]
fn codex_unknown_items_invalid_arguments_and_missing_name() {
    let e = read(&["codex-unknown.jsonl"], false)
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "tests/fixtures/import/codex-unknown.jsonl:9: missing field `payload.name`"
    );
    let c = read(&["codex-unknown.jsonl"], true).unwrap();
    assert_eq!(c.files[0].unknown_records, 2);
    let s = only(&c);
    assert_eq!(
        types(s),
        vec!["session", "session", "user", "tool_call", "tool_result"]
    );
    assert_eq!(s.meta.model.as_deref(), Some("gpt-x"));
    match &s.events[3].record {
        Record::ToolCall { args, .. } => assert_eq!(args["_raw"], "{\"cmd\": \"ls\", \"yield\": 1"),
        other => panic!("{other:?}"),
    }
    assert!(
        matches!(&s.events[4].record, Record::ToolResult { output: Some(o), error: Some(true), .. } if o == "boom")
    );
}

#[test]
fn opencode_export() {
    let c = read(&["opencode-export.json"], false).unwrap();
    assert_eq!(c.files[0].format, "opencode");
    let s = only(&c);
    assert_eq!(
        types(s),
        vec![
            "session",
            "user",
            "turn",
            "thought",
            "tool_call",
            "tool_result",
            "usage",
            "turn",
            "tool_call",
            "tool_result",
            "tool_call",
            "usage",
            "turn",
            "content"
        ]
    );
    assert_eq!(s.turns, 3);
    assert_eq!(s.meta.meta["parent_session"], "ses_parent");
    assert_eq!(s.meta.model.as_deref(), Some("claude-sonnet"));
    assert_eq!(
        s.events[1].record,
        Record::User {
            text: "fix the build".into(),
            prompt_id: Some("msg_1".into())
        }
    );
    assert!(matches!(
        &s.events[9].record,
        Record::ToolResult {
            error: Some(true),
            ..
        }
    ));
    assert_eq!(
        s.events[6].record,
        Record::Usage {
            input_tokens: Some(100),
            output_tokens: Some(15)
        }
    );
}

#[test]
fn goose_session_jsonl() {
    let c = read(&["goose-session.jsonl"], false).unwrap();
    assert_eq!(c.files[0].format, "goose");
    let s = only(&c);
    assert_eq!(
        types(s),
        vec![
            "session",
            "user",
            "turn",
            "content",
            "tool_call",
            "tool_result",
            "turn",
            "tool_call",
            "tool_result"
        ]
    );
    assert_eq!(s.meta.meta["working_dir"], "/home/u/proj");
    match &s.events[7].record {
        Record::ToolCall { name, args, .. } => {
            assert_eq!(name, "invalid_tool_call");
            assert_eq!(args["_error"], "Could not parse tool arguments");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn walked_unknown_files_are_skipped_but_named_ones_fail() {
    let c = read(&["walk"], false).unwrap();
    assert_eq!(c.files.len(), 1);
    assert_eq!(c.sessions.len(), 1);
    assert_eq!(c.skipped.len(), 1);
    assert!(
        matches!(&c.skipped[0], Skip::Unrecognised { file, .. } if file == "tests/fixtures/import/walk/report.json"),
        "{:?}",
        c.skipped[0]
    );
    assert!(
        c.skipped[0].to_string().starts_with(
            "tests/fixtures/import/walk/report.json: skipped file (not a recognised session log"
        ),
        "{}",
        c.skipped[0]
    );
    let e = read(&["walk/report.json"], false).unwrap_err().to_string();
    assert!(
        e.starts_with("tests/fixtures/import/walk/report.json: not a recognised session log"),
        "{e}"
    );
    assert!(e.contains("claude-code") && e.contains("goose"), "{e}");
    // Forcing a format on a file that does not fit it names the format.
    let forced = read_corpus(
        &[fx("goose-session.jsonl")],
        &ReadOptions {
            format: looptune::input::import::InputFormat::Native("codex"),
            ..Default::default()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(forced.contains("format `codex`"), "{forced}");
}

#[test]
fn clashing_native_stems_take_as_many_folders_as_needed() {
    let c = read(&["clash"], false).unwrap();
    let ids: Vec<&str> = c.sessions.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, vec!["run1/x/task.traj", "run2/x/task.traj"]);
    // Given alone, a file keeps its plain stem.
    let c = read(&["clash/run1/x/task.traj.json"], false).unwrap();
    assert_eq!(only(&c).id, "task.traj");
}

#[test]
fn canonical_files_keep_merging_by_id() {
    let c = read(&["canonical-merge"], false).unwrap();
    let ids: Vec<(&str, u32)> = c
        .sessions
        .iter()
        .map(|s| (s.id.as_str(), s.turns))
        .collect();
    assert_eq!(ids, vec![("c", 1), ("same", 2)]);
    assert!(!c.sessions[1].whole_messages);
}

#[test]
fn writer_round_trips_imported_fixtures() {
    let c = read(
        &[
            "opencode-export.json",
            "goose-session.jsonl",
            "subagent-only",
            "claude-edge.jsonl",
        ],
        true,
    )
    .unwrap();
    let mut buf = Vec::new();
    looptune::input::import::write_canonical(&c, &mut buf, false).unwrap();
    let back = looptune::input::parse_canonical("out.jsonl", "out", &buf, false).unwrap();
    assert_eq!(back.sessions.len(), c.sessions.len());
    for ((id, recs), s) in back.sessions.iter().zip(&c.sessions) {
        assert_eq!(id, &s.id);
        let orig: Vec<&Record> = s.events.iter().map(|e| &e.record).collect();
        assert_eq!(recs.len(), orig.len());
        // The first session record also carries the metadata from outside the records.
        for (i, (r, o)) in recs.iter().zip(&orig).enumerate() {
            if i > 0 || !matches!(o, Record::Session { .. }) {
                assert_eq!(&&r.record, o, "{id} record {i}");
            }
        }
    }
    let text = String::from_utf8(buf).unwrap();
    assert!(text
        .lines()
        .all(|l| l.starts_with("{\"type\":") && l.contains(",\"session\":")));
    assert!(text.contains("\"parent_session\":\"parent-0001\""));
}

/// What a session is, with every record's place resolved to a path: equal for
/// a streamed read and a whole-corpus read whatever the files' positions.
fn shape(s: &Session, place: impl Fn(&looptune::event::Origin) -> String) -> String {
    let records: Vec<String> = s
        .events
        .iter()
        .map(|e| format!("{:?}@{}#{}", e.record, place(&e.origin), e.turn))
        .collect();
    format!(
        "{}|{}|{:?}|{:?}|{}",
        s.id,
        s.whole_messages,
        s.meta,
        s.inline_label,
        records.join(";")
    )
}

#[test]
fn a_streamed_read_gives_the_sessions_of_a_whole_read() {
    let cases: &[&[&str]] = &[
        &["resume"],
        &["resume", "resume-other"],
        &["clash"],
        &["canonical-merge"],
        &["subagent-only"],
        &["."],
    ];
    for (lenient, jobs) in [(true, 1), (true, 0), (false, 2)] {
        for paths in cases {
            let whole = read(paths, lenient);
            let paths: Vec<PathBuf> = paths.iter().map(|p| fx(p)).collect();
            let opts = ReadOptions {
                lenient,
                ..Default::default()
            };
            let workers = looptune::replay::Workers::new(jobs).unwrap();
            let streamed = looptune::input::InputFiles::walk(&paths, lenient).and_then(|files| {
                looptune::input::stream_sessions(
                    &files,
                    &opts,
                    &workers,
                    &looptune::progress::NoProgress,
                    &|s, names| shape(&s, |o| names.provenance(o).to_string()),
                )
            });
            let (whole, streamed) = match (whole, streamed) {
                (Ok(w), Ok(s)) => (w, s),
                (Err(a), Err(b)) => {
                    assert_eq!(a.to_string(), b.to_string(), "{paths:?}");
                    continue;
                }
                (a, b) => panic!("{paths:?}: {:?} vs {:?}", a.err(), b.err()),
            };
            let expected: Vec<(String, String)> = whole
                .sessions
                .iter()
                .map(|s| {
                    (
                        s.id.clone(),
                        shape(s, |o| whole.origin_provenance(o).to_string()),
                    )
                })
                .collect();
            assert!(!expected.is_empty(), "{paths:?}");
            assert_eq!(streamed.sessions, expected, "{paths:?}");
            assert_eq!(streamed.files, whole.files, "{paths:?}");
            assert_eq!(streamed.skipped, whole.skipped, "{paths:?}");
            assert_eq!(streamed.unreadable, whole.unreadable, "{paths:?}");
        }
    }
}
