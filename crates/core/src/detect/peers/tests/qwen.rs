//! Qwen Code's own `loopDetectionService.test.ts` (@00aa71b4), ported case
//! by case to the port's service (same events, same answers), then the
//! session driver: canonical records in, first detections out.
//!
//! Not ported: the stub-envelope fingerprint cases (replay compares recorded
//! outputs, never Qwen Code's persistence stubs), telemetry arguments, the
//! `recordToolResultByCallId` map-eviction case (replay pairs results with
//! the peers' rule), and the random-content case (replaced by a fixed one).

use super::obj;
use crate::detect::peers::qwen::{kind, QwenEvent, QwenService, QwenSettings};
use crate::detect::{run_checks, DetectorConfig, Prepared};
use crate::event::{Origin, Record, Session};
use serde_json::{json, Value};
use std::sync::Arc;

const TOOL_CALL_LOOP_THRESHOLD: usize = 5;
const CONTENT_LOOP_THRESHOLD: usize = 10;
const CONTENT_CHUNK_SIZE: usize = 50;
const FILE_READ_WINDOW: usize = 15;
const GLOBAL_DUPLICATE_THRESHOLD: usize = 6;
const SHELL_THRESHOLD: usize = 8;
const ALTERNATING_PATTERN_CYCLES: usize = 3;

/// `makeConfig(cap, explicit, skipLoopDetection)`.
fn make(cap: Option<u64>, explicit: bool, skip: bool) -> QwenService {
    let mut s = QwenSettings::profile("qwen").unwrap();
    s.max_calls = cap;
    s.max_calls_explicit = explicit;
    s.skip = skip;
    QwenService::new(s)
}

fn service() -> QwenService {
    make(Some(100), false, true)
}

fn add(s: &mut QwenService, name: &str, args: Value) -> bool {
    let a = obj(args);
    s.add_and_check(QwenEvent::ToolCall { name, args: &a })
}

fn guard(s: &mut QwenService, name: &str, args: Value) -> bool {
    let a = obj(args);
    s.check_always_on(QwenEvent::ToolCall { name, args: &a })
}

fn heur(s: &mut QwenService, name: &str, args: Value) -> bool {
    let a = obj(args);
    s.add_and_check_heuristic(QwenEvent::ToolCall { name, args: &a })
}

fn text(s: &mut QwenService, t: &str) -> bool {
    s.add_and_check(QwenEvent::Content(t))
}

fn feed(s: &mut QwenService, t: &str, times: usize) -> bool {
    let mut hit = false;
    for _ in 0..times {
        hit = text(s, t);
    }
    hit
}

fn thought(s: &mut QwenService, subject: &str, description: &str) -> bool {
    s.add_and_check(QwenEvent::Thought {
        subject,
        description,
    })
}

fn result(s: &mut QwenService, name: &str, args: Value, board: &str) -> bool {
    s.record_tool_result(name, &obj(args), &format!("output:{board}"))
}

/// `createRepetitiveContent(id, length)`.
fn repetitive(id: usize, len: usize) -> String {
    let base = format!("This is a unique sentence, id={id}. ");
    base.repeat(len / base.len() + 1)[..len].to_string()
}

fn shell(s: &mut QwenService, command: &str) -> bool {
    guard(
        s,
        "run_shell_command",
        json!({"command": command, "description": "Inspect repository changes"}),
    )
}

// ---- Tool Call Loop Detection ----

#[test]
fn fewer_than_threshold_identical_calls_no_loop() {
    let mut s = service();
    for _ in 0..TOOL_CALL_LOOP_THRESHOLD - 1 {
        assert!(!add(&mut s, "testTool", json!({"param": "value"})));
    }
    assert!(s.logged().is_empty());
}

#[test]
fn threshold_th_identical_call_is_a_loop() {
    let mut s = service();
    for _ in 0..TOOL_CALL_LOOP_THRESHOLD - 1 {
        add(&mut s, "testTool", json!({"param": "value"}));
    }
    assert!(add(&mut s, "testTool", json!({"param": "value"})));
    assert_eq!(s.logged(), [kind::CONSECUTIVE]);
}

#[test]
fn subsequent_identical_calls_stay_detected_logged_once() {
    let mut s = service();
    for _ in 0..TOOL_CALL_LOOP_THRESHOLD {
        add(&mut s, "testTool", json!({"param": "value"}));
    }
    assert!(add(&mut s, "testTool", json!({"param": "value"})));
    assert_eq!(s.logged().len(), 1);
}

#[test]
fn different_tool_calls_no_loop() {
    let mut s = service();
    for _ in 0..TOOL_CALL_LOOP_THRESHOLD - 2 {
        assert!(!add(&mut s, "testTool", json!({"param": "value1"})));
        assert!(!add(&mut s, "testTool", json!({"param": "value2"})));
        assert!(!add(&mut s, "anotherTool", json!({"param": "value1"})));
    }
}

#[test]
fn other_event_types_do_not_reset_the_counter() {
    let mut s = service();
    for _ in 0..TOOL_CALL_LOOP_THRESHOLD - 1 {
        assert!(!add(&mut s, "testTool", json!({"param": "value"})));
    }
    assert!(!s.add_and_check(QwenEvent::Other));
    assert!(add(&mut s, "testTool", json!({"param": "value"})));
    assert_eq!(s.logged().len(), 1);
}

#[test]
fn retry_resets_the_consecutive_counter() {
    let mut s = service();
    for _ in 0..TOOL_CALL_LOOP_THRESHOLD - 1 {
        assert!(!guard(&mut s, "testTool", json!({"param": "value"})));
    }
    assert!(!s.check_always_on(QwenEvent::Retry));
    for _ in 0..TOOL_CALL_LOOP_THRESHOLD - 1 {
        assert!(!guard(&mut s, "testTool", json!({"param": "value"})));
    }
    assert!(s.logged().is_empty());
}

#[test]
fn exposes_the_consecutive_count() {
    let mut s = service();
    for _ in 0..TOOL_CALL_LOOP_THRESHOLD - 1 {
        guard(&mut s, "testTool", json!({"param": "value"}));
    }
    assert_eq!(s.consecutive_count() as usize, TOOL_CALL_LOOP_THRESHOLD - 1);
    assert!(guard(&mut s, "testTool", json!({"param": "value"})));
    assert_eq!(s.consecutive_count() as usize, TOOL_CALL_LOOP_THRESHOLD);
}

#[test]
fn always_on_guard_halts_consecutive_identical_calls() {
    let mut s = service();
    for _ in 0..TOOL_CALL_LOOP_THRESHOLD - 1 {
        assert!(!guard(&mut s, "stuck_tool", json!({"p": "same"})));
    }
    assert!(guard(&mut s, "stuck_tool", json!({"p": "same"})));
    assert_eq!(s.last_loop_type(), Some(kind::CONSECUTIVE));
}

#[test]
fn reordered_argument_fields_are_identical() {
    let mut s = service();
    let mut fired = false;
    for i in 0..TOOL_CALL_LOOP_THRESHOLD {
        let a = if i % 2 == 0 {
            r#"{"a":1,"b":2}"#
        } else {
            r#"{"b":2,"a":1}"#
        };
        fired = guard(&mut s, "stuck_tool", serde_json::from_str(a).unwrap());
        if fired {
            break;
        }
    }
    assert!(fired);
    assert_eq!(s.last_loop_type(), Some(kind::CONSECUTIVE));
}

#[test]
fn session_disable_silences_the_always_on_guard() {
    let mut s = service();
    s.disable_for_session();
    for _ in 0..TOOL_CALL_LOOP_THRESHOLD + 2 {
        assert!(!guard(&mut s, "stuck_tool", json!({"p": "same"})));
    }
    for _ in 0..TOOL_CALL_LOOP_THRESHOLD {
        assert!(!add(&mut s, "testTool", json!({"param": "value"})));
    }
    assert!(s.logged().is_empty());
}

// ---- Shell Command Stagnation ----

#[test]
fn shell_git_inspection_variants_halt() {
    let mut s = service();
    let commands = [
        "git status --short",
        "git status --short && git diff --stat",
        "git diff --name-only HEAD",
        "git status --porcelain=v1",
        "git diff --stat HEAD",
        "git -C . status --short",
        "git --no-pager diff --stat",
        "git ls-files --modified",
    ];
    for c in &commands[..7] {
        assert!(!shell(&mut s, c), "{c}");
    }
    assert!(shell(&mut s, commands[7]));
    assert_eq!(s.last_loop_type(), Some(kind::SHELL));
}

const VARIANTS: [&str; 7] = [
    "git status --short",
    "git diff --stat",
    "git ls-files --modified",
    "git status --porcelain=v1",
    "git diff --name-only HEAD",
    "git -C . status --short",
    "git --no-pager diff --stat",
];

#[test]
fn shell_streak_resets_on_a_non_inspection_call() {
    let mut s = service();
    for i in 0..SHELL_THRESHOLD - 1 {
        assert!(!shell(&mut s, VARIANTS[i % 7]));
    }
    assert!(!guard(
        &mut s,
        "read_file",
        json!({"absolute_path": "/repo/README.md"})
    ));
    for i in 0..SHELL_THRESHOLD - 1 {
        assert!(!shell(&mut s, VARIANTS[i % 7]));
    }
    assert_ne!(s.last_loop_type(), Some(kind::SHELL));
}

#[test]
fn shell_streak_resets_on_retry() {
    let mut s = service();
    for c in VARIANTS {
        assert!(!shell(&mut s, c));
    }
    assert!(!s.check_always_on(QwenEvent::Retry));
    for c in VARIANTS {
        assert!(!shell(&mut s, c));
    }
    assert_ne!(s.last_loop_type(), Some(kind::SHELL));
}

#[test]
fn shell_session_disable() {
    let mut s = service();
    s.disable_for_session();
    for c in VARIANTS.iter().chain(&["git ls-files --others"]) {
        assert!(!shell(&mut s, c));
    }
    assert!(s.logged().is_empty());
}

#[test]
fn shell_chains_that_write_are_not_bucketed() {
    let mut s = service();
    for i in 0..SHELL_THRESHOLD {
        let c = format!("git add file-{i}.txt && git status --short && git commit -m progress-{i}");
        assert!(!shell(&mut s, &c));
    }
    assert_ne!(s.last_loop_type(), Some(kind::SHELL));
}

#[test]
fn shell_chains_with_non_git_commands_are_not_bucketed() {
    let mut s = service();
    for i in 0..SHELL_THRESHOLD {
        let c = format!("git status --short && npm test -- --runInBand={i}");
        assert!(!shell(&mut s, &c));
    }
    assert_ne!(s.last_loop_type(), Some(kind::SHELL));
}

#[test]
fn repeated_non_git_shell_commands_do_not_halt() {
    let mut s = service();
    for i in 0..SHELL_THRESHOLD + 2 {
        assert!(!shell(&mut s, &format!("npm test -- --runInBand={i}")));
    }
    assert_ne!(s.last_loop_type(), Some(kind::SHELL));
}

#[test]
fn newline_separated_git_inspections_halt() {
    let mut s = service();
    let commands = [
        "git diff --stat\ngit status --short",
        "git diff --name-only HEAD\ngit ls-files --modified",
        "git --no-pager diff --stat\ngit status --porcelain=v1",
        "git diff --stat HEAD\ngit ls-files --others",
        "git diff --name-only\ngit status --short",
        "git diff --stat\ngit -C . status --short",
        "git --no-pager diff --stat\ngit ls-files --modified",
        "git diff --name-only HEAD\ngit status --short",
    ];
    for c in &commands[..7] {
        assert!(!shell(&mut s, c));
    }
    assert!(shell(&mut s, commands[7]));
    assert_eq!(s.last_loop_type(), Some(kind::SHELL));
}

#[test]
fn file_specific_git_diffs_do_not_halt() {
    for sep in ["-- ", ""] {
        let mut s = service();
        let mut commands = vec!["git status --short".to_string(), "git diff --stat".into()];
        for f in ["a", "b", "c", "d", "e", "f"] {
            commands.push(format!("git diff {sep}src/{f}.ts"));
        }
        for c in &commands {
            assert!(!shell(&mut s, c), "{c}");
        }
        assert!(s.logged().is_empty());
    }
}

// ---- Content Loop Detection ----

#[test]
fn varied_content_is_no_loop() {
    let mut s = service();
    // The original feeds 1000 random 10-character strings; a fixed
    // non-repeating sequence exercises the same path deterministically.
    for i in 0..1000u64 {
        let t = format!("{:010x}", i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 24);
        assert!(!text(&mut s, &t));
    }
    assert!(s.logged().is_empty());
}

#[test]
fn repeated_chunk_is_a_loop() {
    let mut s = service();
    assert!(feed(
        &mut s,
        &repetitive(1, CONTENT_CHUNK_SIZE),
        CONTENT_LOOP_THRESHOLD
    ));
    assert_eq!(s.logged(), [kind::CHANTING]);
}

#[test]
fn far_apart_repetitions_are_no_loop() {
    let mut s = service();
    let filler: String = (0..500)
        .map(|i| {
            char::from(
                b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
                    [(i * 7 + i / 62) % 62],
            )
        })
        .collect();
    let mut hit = false;
    for _ in 0..CONTENT_LOOP_THRESHOLD {
        hit = text(&mut s, &repetitive(1, CONTENT_CHUNK_SIZE));
        hit = text(&mut s, &filler) || hit;
    }
    assert!(!hit);
    assert!(s.logged().is_empty());
}

#[test]
fn every_bullet_marker_resets() {
    for marker in ["-", "*", "+"] {
        let mut s = service();
        let bullet = format!("{marker} {}\n", repetitive(1, CONTENT_CHUNK_SIZE));
        assert!(
            !feed(&mut s, &bullet, CONTENT_LOOP_THRESHOLD * 2),
            "{marker}"
        );
        assert!(s.logged().is_empty());
    }
}

#[test]
fn repeated_non_list_content_still_loops() {
    let mut s = service();
    let line = format!("{}\n", repetitive(1, CONTENT_CHUNK_SIZE));
    assert!(feed(&mut s, &line, CONTENT_LOOP_THRESHOLD));
}

#[test]
fn chanted_letters_and_digits_are_not_dividers() {
    for token in ["ABCDE", "01234", "SELEC"] {
        let mut s = service();
        let chant = token.repeat(CONTENT_CHUNK_SIZE / token.len());
        assert!(feed(&mut s, &chant, CONTENT_LOOP_THRESHOLD), "{token}");
    }
}

#[test]
fn real_rules_are_still_dividers() {
    for c in ["-", "=", "*", "_", "+", "─", "━"] {
        let mut s = service();
        assert!(
            !feed(
                &mut s,
                &c.repeat(CONTENT_CHUNK_SIZE),
                CONTENT_LOOP_THRESHOLD * 2
            ),
            "{c}"
        );
        assert!(s.logged().is_empty());
    }
}

// ---- Content with code blocks ----

#[test]
fn repetition_inside_a_code_block_is_no_loop() {
    let mut s = service();
    text(&mut s, "```\n");
    for _ in 0..CONTENT_LOOP_THRESHOLD {
        assert!(!text(&mut s, &repetitive(1, CONTENT_CHUNK_SIZE)));
    }
    assert!(!text(&mut s, "\n```"));
    assert!(s.logged().is_empty());
}

#[test]
fn transition_into_a_code_block_stops_detection() {
    let mut s = service();
    let r = repetitive(1, CONTENT_CHUNK_SIZE);
    for _ in 0..CONTENT_LOOP_THRESHOLD - 2 {
        text(&mut s, &r);
    }
    assert!(!text(&mut s, "```javascript\n"));
    for _ in 0..CONTENT_LOOP_THRESHOLD {
        assert!(!text(&mut s, &r));
    }
    assert!(s.logged().is_empty());
}

#[test]
fn already_inside_a_code_block_is_skipped() {
    let mut s = service();
    text(&mut s, "Here is some code:\n```\n");
    for _ in 0..CONTENT_LOOP_THRESHOLD + 5 {
        assert!(!text(&mut s, &repetitive(1, CONTENT_CHUNK_SIZE)));
    }
    assert!(s.logged().is_empty());
}

#[test]
fn multiple_fence_transitions() {
    let mut s = service();
    text(&mut s, "Normal text ");
    assert!(!text(&mut s, "```\n"));
    for _ in 0..5 {
        assert!(!text(&mut s, &repetitive(1, CONTENT_CHUNK_SIZE)));
    }
    assert!(!text(&mut s, "```\n"));
    assert!(!text(&mut s, "```python\n"));
    assert!(s.logged().is_empty());
}

#[test]
fn repetition_after_a_closed_code_block_loops() {
    for code in ["\nsome code\n", "\ncode1\n"] {
        let mut s = service();
        text(&mut s, "```");
        text(&mut s, code);
        text(&mut s, "```");
        assert!(feed(
            &mut s,
            &repetitive(1, CONTENT_CHUNK_SIZE),
            CONTENT_LOOP_THRESHOLD
        ));
        assert_eq!(s.logged().len(), 1);
    }
}

#[test]
fn several_code_blocks_no_loop() {
    let mut s = service();
    text(&mut s, "```\ncode1\n```");
    text(&mut s, "\nsome text\n");
    assert!(!text(&mut s, "```\ncode2\n```"));
    assert!(s.logged().is_empty());
}

#[test]
fn long_code_block_with_repeating_tokens() {
    let mut s = service();
    text(&mut s, "```\n");
    for _ in 0..20 {
        assert!(!text(
            &mut s,
            "for (let i = 0; i < 10; i++) { console.log(i); }"
        ));
    }
    assert!(!text(&mut s, "\n```"));
    assert!(s.logged().is_empty());
}

#[test]
fn a_fence_resets_tracking() {
    let mut s = service();
    let r = repetitive(1, CONTENT_CHUNK_SIZE);
    for _ in 0..CONTENT_LOOP_THRESHOLD - 1 {
        text(&mut s, &r);
    }
    text(&mut s, "```");
    for _ in 0..CONTENT_LOOP_THRESHOLD {
        assert!(!text(&mut s, &r));
    }
    assert!(s.logged().is_empty());
}

#[test]
fn markdown_elements_reset_tracking() {
    for element in [
        "| Column 1 | Column 2 |",
        "* List item",
        "## Heading",
        "> Quote text",
    ] {
        let mut s = service();
        let r = repetitive(1, CONTENT_CHUNK_SIZE);
        for _ in 0..CONTENT_LOOP_THRESHOLD - 1 {
            text(&mut s, &r);
        }
        text(&mut s, element);
        for _ in 0..CONTENT_LOOP_THRESHOLD - 1 {
            assert!(!text(&mut s, &r), "{element}");
        }
        assert!(s.logged().is_empty());
    }
}

#[test]
fn list_table_and_heading_formats_reset_tracking() {
    let groups: [(&[&str], usize); 3] = [
        (
            &[
                "* Bullet item",
                "- Dash item",
                "+ Plus item",
                "1. Numbered item",
                "42. Another numbered item",
            ],
            100,
        ),
        (
            &[
                "| Column 1 | Column 2 |",
                "|---|---|",
                "|++|++|",
                "+---+---+",
            ],
            200,
        ),
        (
            &[
                "# H1 Heading",
                "## H2 Heading",
                "### H3 Heading",
                "#### H4 Heading",
                "##### H5 Heading",
                "###### H6 Heading",
            ],
            300,
        ),
    ];
    let mut s = service();
    for (formats, base) in groups {
        for (i, f) in formats.iter().enumerate() {
            s.reset();
            for _ in 0..CONTENT_LOOP_THRESHOLD - 1 {
                text(&mut s, &repetitive(1, CONTENT_CHUNK_SIZE));
            }
            text(&mut s, &format!("\n{f}"));
            for _ in 0..CONTENT_LOOP_THRESHOLD - 1 {
                assert!(
                    !text(&mut s, &repetitive(base + i, CONTENT_CHUNK_SIZE)),
                    "{f}"
                );
            }
        }
    }
    assert!(s.logged().is_empty());
}

#[test]
fn empty_content() {
    let mut s = service();
    assert!(!text(&mut s, ""));
}

#[test]
fn divider_chunks_never_loop() {
    for d in [
        "-".repeat(CONTENT_CHUNK_SIZE),
        "╭─".repeat(CONTENT_CHUNK_SIZE / 2),
    ] {
        let mut s = service();
        for _ in 0..CONTENT_LOOP_THRESHOLD + 5 {
            assert!(!text(&mut s, &d));
        }
        assert!(s.logged().is_empty());
    }
}

#[test]
fn a_tool_call_resets_content() {
    let mut s = service();
    for _ in 0..9 {
        text(&mut s, "Some content.");
    }
    add(&mut s, "testTool", json!({"param": "value"}));
    assert!(!text(&mut s, "Fresh content."));
}

#[test]
fn unhandled_events_are_false() {
    let mut s = service();
    assert!(!s.add_and_check(QwenEvent::Other));
    assert!(!s.add_and_check(QwenEvent::Other));
}

// ---- Repetitive thoughts ----

#[test]
fn repetitive_thoughts() {
    let mut s = service();
    for _ in 0..3 {
        thought(&mut s, "Plan", "Inspect the migration script.");
    }
    assert_eq!(s.logged(), [kind::THOUGHTS]);
}

#[test]
fn varied_thoughts() {
    let mut s = service();
    thought(&mut s, "Plan", "Inspect the schema.");
    thought(&mut s, "Analysis", "Check migration risks.");
    thought(&mut s, "Plan", "Evaluate rollout alternatives.");
    assert!(!thought(&mut s, "Next", "Draft the fix."));
    assert!(s.logged().is_empty());
}

#[test]
fn an_earlier_thought_reappearing_after_progress() {
    let mut s = service();
    thought(&mut s, "Plan", "Inspect the schema.");
    thought(&mut s, "Analysis", "Consider migration.");
    thought(&mut s, "Analysis", "Review indexes.");
    thought(&mut s, "Plan", "Inspect the schema.");
    thought(&mut s, "Analysis", "Consider rollout risks.");
    assert!(!thought(&mut s, "Plan", "Inspect the schema."));
    assert!(s.logged().is_empty());
}

#[test]
fn tool_calls_clear_thought_history() {
    let mut s = service();
    thought(&mut s, "Plan", "Inspect the schema.");
    add(&mut s, "read_file", json!({"path": "a.sql"}));
    thought(&mut s, "Plan", "Inspect the schema.");
    add(&mut s, "read_file", json!({"path": "b.sql"}));
    assert!(!thought(&mut s, "Plan", "Inspect the schema."));
    assert!(s.logged().is_empty());
}

#[test]
fn content_never_feeds_thoughts() {
    let mut s = service();
    for _ in 0..5 {
        text(&mut s, "I should check the config, maybe it helps.");
    }
    assert!(!s.logged().contains(&kind::THOUGHTS));
}

// ---- Read file loop ----

fn prime(s: &mut QwenService) {
    add(s, "write_file", json!({"path": "prime.txt", "content": ""}));
}

#[test]
fn excessive_reads() {
    let mut s = service();
    prime(&mut s);
    for i in 0..7 {
        assert!(!add(
            &mut s,
            "read_file",
            json!({"path": format!("file{i}.txt")})
        ));
    }
    assert!(add(&mut s, "read_file", json!({"path": "file7.txt"})));
    assert!(s.logged().contains(&kind::READ));
}

#[test]
fn opening_exploration_is_exempt() {
    let mut s = service();
    for i in 0..20 {
        let name = if i % 2 == 0 {
            "read_file"
        } else {
            "list_directory"
        };
        assert!(!add(&mut s, name, json!({"path": format!("f{i}")})));
    }
    assert!(!s.logged().contains(&kind::READ));
}

#[test]
fn read_loop_activates_after_a_non_read_tool() {
    let mut s = service();
    for i in 0..7 {
        add(&mut s, "read_file", json!({"path": format!("pre{i}.txt")}));
    }
    assert!(s.logged().is_empty());
    add(
        &mut s,
        "write_file",
        json!({"path": "out.txt", "content": "x"}),
    );
    let mut detected = false;
    for i in 0..FILE_READ_WINDOW + 2 {
        detected = add(&mut s, "read_file", json!({"path": format!("post{i}.txt")}));
        if detected {
            break;
        }
    }
    assert!(detected);
    assert!(s.logged().contains(&kind::READ));
}

#[test]
fn read_like_names_and_prefixes() {
    let mut s = service();
    prime(&mut s);
    add(&mut s, "read_many_files", json!({"paths": ["file1.txt"]}));
    add(&mut s, "list_directory", json!({"path": "."}));
    add(&mut s, "read_resource", json!({"uri": "a"}));
    add(
        &mut s,
        "zoom_image",
        json!({"file_path": "chart.png", "x1": 0, "y1": 0, "x2": 500, "y2": 500}),
    );
    add(&mut s, "list_projects", json!({}));
    add(&mut s, "read_file", json!({"path": "file5.txt"}));
    add(&mut s, "read_many_files", json!({"paths": ["file6.txt"]}));
    assert!(add(&mut s, "list_directory", json!({"path": "nested"})));
    assert!(s.logged().contains(&kind::READ));
}

#[test]
fn read_like_substrings_are_not_reads() {
    let mut s = service();
    prime(&mut s);
    let names = ["review", "concat_chunks", "viewport_set", "listener_bind"];
    for i in 0..6 {
        assert!(!add(&mut s, names[i % 4], json!({"i": i})));
    }
    assert!(!s.logged().contains(&kind::READ));
}

#[test]
fn mixed_operations_are_no_read_loop() {
    let mut s = service();
    prime(&mut s);
    add(&mut s, "read_file", json!({"path": "file1.txt"}));
    add(
        &mut s,
        "write_file",
        json!({"path": "file2.txt", "content": "test"}),
    );
    add(&mut s, "read_file", json!({"path": "file3.txt"}));
    add(&mut s, "execute", json!({"command": "ls"}));
    add(&mut s, "read_file", json!({"path": "file4.txt"}));
    assert!(!add(&mut s, "read_file", json!({"path": "file5.txt"})));
    assert!(!s.logged().contains(&kind::READ));
}

// ---- Action stagnation ----

#[test]
fn same_name_with_varying_args_stagnates() {
    let mut s = service();
    for i in 0..7 {
        assert!(!add(
            &mut s,
            "search_code",
            json!({"query": format!("term{i}")})
        ));
    }
    assert!(add(&mut s, "search_code", json!({"query": "term7"})));
    assert!(s.logged().contains(&kind::STAGNATION));
}

#[test]
fn a_different_tool_resets_the_stagnation_streak() {
    let mut s = service();
    for i in 0..5 {
        add(&mut s, "search_code", json!({"query": format!("a{i}")}));
    }
    add(
        &mut s,
        "write_file",
        json!({"path": "out.txt", "content": "x"}),
    );
    for i in 0..5 {
        assert!(!add(
            &mut s,
            "search_code",
            json!({"query": format!("b{i}")})
        ));
    }
}

// ---- Turn tool call cap (soft cap 10) ----

const SOFT_CAP: u64 = 10;
const HARD_CAP: u64 = SOFT_CAP * 10;

fn cap_service() -> QwenService {
    make(Some(SOFT_CAP), false, true)
}

#[test]
fn cap_silent_up_to_the_soft_cap() {
    let mut s = cap_service();
    for i in 0..SOFT_CAP {
        assert!(!guard(&mut s, "any_tool", json!({"i": i})));
    }
}

#[test]
fn cap_lets_diverse_calls_pass_the_soft_cap() {
    let mut s = cap_service();
    for i in 0..HARD_CAP - 1 {
        assert!(!guard(&mut s, "any_tool", json!({"i": i})));
    }
    assert_eq!(s.last_loop_type(), None);
}

#[test]
fn cap_fires_when_a_stuck_signal_builds_past_the_soft_cap() {
    let mut s = cap_service();
    for i in 0..SOFT_CAP {
        assert!(!guard(&mut s, "any_tool", json!({"i": i})));
    }
    let mut fired = false;
    for i in 0..GLOBAL_DUPLICATE_THRESHOLD * 2 {
        let args = if i % 2 == 0 {
            json!({"stuck": true})
        } else {
            json!({"filler": i})
        };
        fired = guard(&mut s, "any_tool", args);
        if fired {
            break;
        }
    }
    assert!(fired);
    assert_eq!(s.last_loop_type(), Some(kind::CAP));
}

#[test]
fn cap_stuck_signal_survives_finished() {
    let mut s = cap_service();
    let mut fired = false;
    for rt in 0..3 {
        for args in [
            json!({"same": true}),
            json!({"d": rt * 2}),
            json!({"same": true}),
            json!({"d": rt * 2 + 1}),
        ] {
            if !fired {
                fired = guard(&mut s, "t", args);
            }
        }
        if !fired {
            s.check_always_on(QwenEvent::Finished);
        }
    }
    assert!(fired);
    assert_eq!(s.last_loop_type(), Some(kind::CAP));
}

#[test]
fn cap_reordered_nested_fields_are_one_call() {
    let variants = [
        r#"{"a":1,"b":2,"c":3,"nested":{"x":10,"y":20}}"#,
        r#"{"nested":{"y":20,"x":10},"c":3,"b":2,"a":1}"#,
        r#"{"b":2,"a":1,"nested":{"x":10,"y":20},"c":3}"#,
        r#"{"c":3,"nested":{"y":20,"x":10},"a":1,"b":2}"#,
        r#"{"nested":{"x":10,"y":20},"a":1,"c":3,"b":2}"#,
        r#"{"b":2,"c":3,"a":1,"nested":{"y":20,"x":10}}"#,
    ];
    let mut s = cap_service();
    let mut fired = false;
    for i in 0..SOFT_CAP as usize + variants.len() {
        let args = if i % 2 == 0 {
            serde_json::from_str(variants[(i / 2) % variants.len()]).unwrap()
        } else {
            json!({"filler": i})
        };
        fired = guard(&mut s, "any_tool", args);
        if fired {
            break;
        }
    }
    assert!(fired);
    assert_eq!(s.last_loop_type(), Some(kind::CAP));
}

#[test]
fn cap_fires_at_the_hard_cap() {
    let mut s = cap_service();
    for i in 0..HARD_CAP {
        assert!(!guard(&mut s, "t", json!({"i": i})));
    }
    assert!(guard(&mut s, "t", json!({"last": true})));
    assert_eq!(s.last_loop_type(), Some(kind::CAP));
}

#[test]
fn cap_fires_at_the_soft_cap_with_a_stuck_signal() {
    let mut s = cap_service();
    let mut fired = false;
    for i in 0..SOFT_CAP as usize + GLOBAL_DUPLICATE_THRESHOLD {
        let args = if i % 2 == 0 {
            json!({"stuck": true})
        } else {
            json!({"distinct": i})
        };
        fired = guard(&mut s, "any_tool", args);
        if fired {
            break;
        }
    }
    assert!(fired);
    assert_eq!(s.logged(), [kind::CAP]);
}

#[test]
fn cap_default_soft_cap_lets_diverse_calls_pass() {
    let mut s = service();
    for i in 0..101 {
        assert!(!guard(&mut s, "t", json!({"i": i})));
    }
}

#[test]
fn cap_disabled_never_fires() {
    let mut s = make(None, false, true);
    for i in 0..150 {
        assert!(!guard(&mut s, "t", json!({"i": i})));
    }
    assert!(s.logged().is_empty());
}

#[test]
fn cap_session_disable() {
    let mut s = cap_service();
    s.disable_for_session();
    for i in 0..HARD_CAP + 10 {
        assert!(!guard(&mut s, "any_tool", json!({"i": i})));
    }
    assert!(s.logged().is_empty());
}

#[test]
fn cap_retry_rolls_back_the_failed_attempt() {
    let mut s = cap_service();
    for i in 0..6 {
        guard(&mut s, "t", json!({"i": i}));
    }
    s.check_always_on(QwenEvent::Retry);
    for i in 0..HARD_CAP {
        assert!(!guard(&mut s, "t", json!({"j": i})));
    }
    assert!(guard(&mut s, "t", json!({"last": true})));
    assert_eq!(s.logged().len(), 1);
}

#[test]
fn cap_retry_rolls_back_the_stuck_signal() {
    let mut s = make(Some(20), false, true);
    for i in 0..6 {
        guard(&mut s, "t", json!({"stuck": true}));
        guard(&mut s, "t", json!({"d": i}));
    }
    s.check_always_on(QwenEvent::Retry);
    for i in 0..25 {
        assert!(!guard(&mut s, "t", json!({"i": i})));
    }
    assert!(s.logged().is_empty());
}

#[test]
fn cap_retry_keeps_committed_round_trips() {
    let mut s = cap_service();
    for i in 0..6 {
        guard(&mut s, "t", json!({"i": i}));
    }
    s.check_always_on(QwenEvent::Finished);
    for i in 0..4 {
        guard(&mut s, "t", json!({"k": i}));
    }
    s.check_always_on(QwenEvent::Retry);
    for i in 0..HARD_CAP - 6 {
        assert!(!guard(&mut s, "t", json!({"m": i})));
    }
    assert!(guard(&mut s, "t", json!({"last": true})));
}

#[test]
fn cap_accumulates_across_round_trips() {
    let mut s = cap_service();
    let mut fired = false;
    'outer: for rt in 0..12 {
        for i in 0..15 {
            fired = guard(&mut s, "t", json!({"rt": rt, "i": i}));
            if fired {
                break 'outer;
            }
        }
        s.check_always_on(QwenEvent::Finished);
    }
    assert!(fired);
    assert_eq!(s.last_loop_type(), Some(kind::CAP));
}

#[test]
fn cap_explicit_value_is_hard() {
    let mut s = make(Some(2), true, true);
    assert!(!guard(&mut s, "t", json!({"a": 1})));
    assert!(!guard(&mut s, "t", json!({"a": 2})));
    assert!(guard(&mut s, "t", json!({"a": 3})));
    assert_eq!(s.last_loop_type(), Some(kind::CAP));
    let mut s = make(Some(2), false, true);
    for a in 1..=3 {
        assert!(!guard(&mut s, "t", json!({"a": a})));
    }
}

// ---- Global duplicates ----

#[test]
fn global_duplicate_below_threshold() {
    let mut s = service();
    for _ in 0..GLOBAL_DUPLICATE_THRESHOLD - 1 {
        assert!(!heur(&mut s, "stuck_tool", json!({"param": "same"})));
    }
}

#[test]
fn global_duplicate_non_consecutive() {
    let mut s = service();
    let others = [
        ("other_a", json!({"x": 1})),
        ("other_b", json!({"y": 2})),
        ("other_c", json!({"z": 3})),
    ];
    for i in 0..GLOBAL_DUPLICATE_THRESHOLD - 1 {
        assert!(!heur(&mut s, "stuck_tool", json!({"param": "same"})));
        let (n, a) = &others[i % 3];
        assert!(!heur(&mut s, n, a.clone()));
    }
    assert!(heur(&mut s, "stuck_tool", json!({"param": "same"})));
    assert_eq!(s.last_loop_type(), Some(kind::GLOBAL));
}

#[test]
fn global_duplicate_distinct_pairs() {
    let mut s = service();
    for i in 0..GLOBAL_DUPLICATE_THRESHOLD {
        assert!(!heur(&mut s, "stuck_tool", json!({"param": i})));
    }
    assert!(s.logged().is_empty());
}

#[test]
fn global_duplicate_fires_for_a_consecutive_run() {
    let mut s = service();
    for _ in 0..GLOBAL_DUPLICATE_THRESHOLD - 1 {
        heur(&mut s, "stuck_tool", json!({"param": "same"}));
    }
    assert!(heur(&mut s, "stuck_tool", json!({"param": "same"})));
    assert!(s.logged().contains(&kind::GLOBAL));
}

#[test]
fn global_duplicate_ignores_a_retried_replay() {
    let mut s = service();
    for _ in 0..GLOBAL_DUPLICATE_THRESHOLD - 3 {
        assert!(!heur(&mut s, "stuck_tool", json!({"param": "same"})));
    }
    s.add_and_check_heuristic(QwenEvent::Retry);
    for _ in 0..GLOBAL_DUPLICATE_THRESHOLD - 3 {
        assert!(!heur(&mut s, "stuck_tool", json!({"param": "same"})));
    }
    assert!(s.logged().is_empty());
}

// ---- Alternating pattern ----

#[test]
fn clean_abab_fires() {
    let mut s = service();
    for _ in 0..ALTERNATING_PATTERN_CYCLES - 1 {
        assert!(!heur(&mut s, "tool_a", json!({"param": "a"})));
        assert!(!heur(&mut s, "tool_b", json!({"param": "b"})));
    }
    assert!(!heur(&mut s, "tool_a", json!({"param": "a"})));
    assert!(heur(&mut s, "tool_b", json!({"param": "b"})));
    assert_eq!(s.last_loop_type(), Some(kind::ALTERNATING));
}

#[test]
fn alternating_names_with_varying_keys() {
    let mut s = service();
    for i in 0..ALTERNATING_PATTERN_CYCLES + 2 {
        assert!(!heur(&mut s, "tool_a", json!({"param": i})));
        assert!(!heur(&mut s, "tool_b", json!({"param": i})));
    }
    assert!(s.logged().is_empty());
}

#[test]
fn a_single_repeated_key_is_not_alternating() {
    let mut s = service();
    for _ in 0..2 * ALTERNATING_PATTERN_CYCLES {
        heur(&mut s, "tool_a", json!({"param": "a"}));
    }
    assert!(!s.logged().contains(&kind::ALTERNATING));
}

#[test]
fn a_third_call_breaks_the_window() {
    let mut s = service();
    for n in [
        "tool_a", "tool_b", "tool_a", "tool_b", "tool_c", "tool_a", "tool_b", "tool_a", "tool_b",
    ] {
        heur(&mut s, n, json!({"param": &n[5..]}));
    }
    assert!(!heur(&mut s, "tool_a", json!({"param": "a"})));
    assert!(heur(&mut s, "tool_b", json!({"param": "b"})));
    assert!(s.logged().contains(&kind::ALTERNATING));
}

// ---- Result-aware guards for stateful read tools ----

fn task_args() -> Value {
    json!({"status": "in_progress", "owner": "peer-a", "blockedBy": ""})
}

fn poll(s: &mut QwenService) -> bool {
    guard(s, "task_list", task_args())
}

#[test]
fn stateful_fail_safe_without_results() {
    let mut s = service();
    for _ in 0..TOOL_CALL_LOOP_THRESHOLD - 1 {
        assert!(!poll(&mut s));
    }
    assert!(poll(&mut s));
    assert_eq!(s.last_loop_type(), Some(kind::CONSECUTIVE));
}

#[test]
fn stateful_unchanged_results_halt() {
    let mut s = service();
    let mut fired = false;
    for _ in 0..TOOL_CALL_LOOP_THRESHOLD {
        fired = poll(&mut s);
        if fired {
            break;
        }
        result(
            &mut s,
            "task_list",
            task_args(),
            "#1 [in_progress] @peer-a — task",
        );
    }
    assert!(fired);
    assert_eq!(s.consecutive_count() as usize, TOOL_CALL_LOOP_THRESHOLD);
}

#[test]
fn stateful_changing_board_never_halts() {
    let mut s = service();
    for i in 0..4 * TOOL_CALL_LOOP_THRESHOLD {
        assert!(!poll(&mut s));
        result(
            &mut s,
            "task_list",
            task_args(),
            &format!("board state v{i}"),
        );
    }
    assert!(s.logged().is_empty());
}

#[test]
fn stateful_productive_polling_passes_the_adaptive_cap() {
    let mut s = service();
    for i in 0..120 {
        assert!(!poll(&mut s));
        result(
            &mut s,
            "task_list",
            task_args(),
            &format!("board state v{i}"),
        );
    }
}

#[test]
fn stateful_streak_restarts_then_halts() {
    let mut s = service();
    for st in ["v1", "v1", "v2", "v1"] {
        assert!(!poll(&mut s));
        result(&mut s, "task_list", task_args(), st);
    }
    assert!(!poll(&mut s));
    result(&mut s, "task_list", task_args(), "v1");
    for _ in 5..=7 {
        assert!(!poll(&mut s));
        result(&mut s, "task_list", task_args(), "v1");
    }
    assert!(poll(&mut s));
    assert_eq!(s.last_loop_type(), Some(kind::CONSECUTIVE));
}

#[test]
fn deterministic_tools_ignore_results() {
    let mut s = service();
    for i in 0..TOOL_CALL_LOOP_THRESHOLD - 1 {
        guard(&mut s, "read_file", json!({"file_path": "/a"}));
        result(
            &mut s,
            "read_file",
            json!({"file_path": "/a"}),
            &format!("content v{i}"),
        );
    }
    assert!(guard(&mut s, "read_file", json!({"file_path": "/a"})));
}

#[test]
fn stateful_global_duplicates_count_results() {
    let interleaved = ["task_list", "tool_b", "tool_c"];
    let mut s = make(Some(100), false, false);
    let mut ordinal = 0;
    for round in 0..GLOBAL_DUPLICATE_THRESHOLD + 1 {
        for n in interleaved {
            let args = if n == "task_list" {
                task_args()
            } else {
                json!({"step": round})
            };
            assert!(!add(&mut s, n, args.clone()));
            if n == "task_list" {
                assert!(!result(&mut s, n, args, &format!("state-{ordinal}")));
                ordinal += 1;
            }
        }
    }
    let mut s = make(Some(100), false, false);
    let mut detected = false;
    'outer: for round in 0..GLOBAL_DUPLICATE_THRESHOLD {
        for n in interleaved {
            let args = if n == "task_list" {
                task_args()
            } else {
                json!({"step": round})
            };
            if add(&mut s, n, args.clone()) {
                detected = true;
                break 'outer;
            }
            if n == "task_list" && result(&mut s, n, args, "frozen board") {
                detected = true;
                break 'outer;
            }
        }
    }
    assert!(detected);
    assert_eq!(s.last_loop_type(), Some(kind::GLOBAL));
}

#[test]
fn stateful_oscillating_board_is_productive() {
    let interleaved = ["task_list", "tool_b", "tool_c"];
    let mut s = make(Some(100), false, false);
    let mut k = 0;
    for round in 0..2 * GLOBAL_DUPLICATE_THRESHOLD + 1 {
        for n in interleaved {
            let args = if n == "task_list" {
                task_args()
            } else {
                json!({"step": round})
            };
            assert!(!add(&mut s, n, args.clone()));
            if n == "task_list" {
                assert!(!result(&mut s, n, args, ["state-a", "state-b"][k % 2]));
                k += 1;
            }
        }
    }
    assert!(s.logged().is_empty());
}

#[test]
fn stateful_oscillation_never_arms_the_cap() {
    let mut s = make(Some(20), false, true);
    let mut total = 0;
    for round in 0..40 {
        assert!(!poll(&mut s));
        assert!(!guard(&mut s, "tool_b", json!({"step": round})));
        total += 2;
        result(
            &mut s,
            "task_list",
            task_args(),
            ["state-a", "state-b"][round % 2],
        );
    }
    assert_eq!(total, 80);
}

#[test]
fn stateful_abab_with_changing_results_is_productive() {
    let mut s = make(Some(100), false, false);
    for round in 0..ALTERNATING_PATTERN_CYCLES + 1 {
        assert!(!add(&mut s, "task_list", task_args()));
        assert!(!result(
            &mut s,
            "task_list",
            task_args(),
            &format!("board state v{round}")
        ));
        assert!(!add(&mut s, "tool_b", json!({"step": "work"})));
    }
    assert!(s.logged().is_empty());
}

#[test]
fn stateful_abab_on_frozen_results_halts() {
    let mut s = make(Some(100), false, false);
    let mut fired = false;
    for _ in 0..8 {
        fired = add(&mut s, "task_list", task_args())
            || result(&mut s, "task_list", task_args(), "frozen board")
            || add(&mut s, "tool_b", json!({"step": "work"}));
        if fired {
            break;
        }
    }
    assert!(fired);
    assert_eq!(s.last_loop_type(), Some(kind::ALTERNATING));
}

#[test]
fn stateful_abab_without_results_halts() {
    let mut s = make(Some(100), false, false);
    let mut fired = false;
    for _ in 0..8 {
        fired =
            add(&mut s, "task_list", task_args()) || add(&mut s, "tool_b", json!({"step": "work"}));
        if fired {
            break;
        }
    }
    assert!(fired);
    assert_eq!(s.last_loop_type(), Some(kind::ALTERNATING));
}

/// Rounds of a parallel batch: both requests reach the guard before the
/// task_list result lands.
fn batched(first_task: bool, board: &dyn Fn(usize) -> String) -> QwenService {
    let mut s = make(Some(100), false, false);
    for round in 0..4 {
        // Feed the batch in order; stop at the first detection.
        let order = if first_task { [0, 1] } else { [1, 0] };
        let fired = order.iter().any(|&which| {
            if which == 0 {
                add(&mut s, "task_list", task_args())
            } else {
                add(&mut s, "tool_b", json!({"step": "work"}))
            }
        });
        if fired || result(&mut s, "task_list", task_args(), &board(round)) {
            break;
        }
    }
    s
}

#[test]
fn stateful_batched_abab_with_changing_results_is_productive() {
    for first_task in [true, false] {
        let s = batched(first_task, &|r| format!("board state v{r}"));
        assert!(s.logged().is_empty(), "first_task={first_task}");
    }
}

#[test]
fn stateful_batched_abab_on_frozen_results_halts() {
    let s = batched(true, &|_| "frozen board".into());
    assert_eq!(s.last_loop_type(), Some(kind::ALTERNATING));
}

#[test]
fn stateful_changed_results_restart_the_stagnation_streak() {
    let mut s = make(Some(100), false, false);
    for i in 0..12 {
        let args = json!({"owner": format!("peer-{}", i % 3)});
        assert!(!add(&mut s, "task_list", args.clone()));
        assert!(!result(&mut s, "task_list", args, &format!("state v{i}")));
    }
    let mut s = make(Some(100), false, false);
    let mut fired = false;
    for i in 0..12 {
        let args = json!({"owner": format!("peer-{}", i % 3)});
        fired = add(&mut s, "task_list", args.clone());
        if fired {
            break;
        }
        result(&mut s, "task_list", args, "frozen board");
    }
    assert!(fired);
    assert_eq!(s.last_loop_type(), Some(kind::STAGNATION));
}

const UNCHANGED: &str = "#1 [in_progress] @peer-a — task";

#[test]
fn stateful_retry_resets_result_evidence() {
    let mut s = service();
    for _ in 0..TOOL_CALL_LOOP_THRESHOLD - 1 {
        poll(&mut s);
        result(&mut s, "task_list", task_args(), UNCHANGED);
    }
    assert!(!s.check_always_on(QwenEvent::Retry));
    for _ in 0..TOOL_CALL_LOOP_THRESHOLD - 1 {
        assert!(!poll(&mut s));
        result(&mut s, "task_list", task_args(), UNCHANGED);
    }
    assert!(poll(&mut s));
}

#[test]
fn stateful_reset_clears_tracking() {
    let mut s = service();
    poll(&mut s);
    result(&mut s, "task_list", task_args(), UNCHANGED);
    s.reset();
    for i in 0..4 * TOOL_CALL_LOOP_THRESHOLD {
        assert!(!poll(&mut s));
        result(&mut s, "task_list", task_args(), &format!("fresh v{i}"));
    }
}

fn frozen_pairs(s: &mut QwenService) {
    for i in 0..GLOBAL_DUPLICATE_THRESHOLD - 1 {
        assert!(!add(s, "tool_b", json!({"step": i})));
        assert!(!add(s, "task_list", task_args()));
        assert!(!result(s, "task_list", task_args(), "frozen board"));
    }
}

#[test]
fn stateful_retry_restarts_pair_counts() {
    let mut s = make(Some(100), false, false);
    frozen_pairs(&mut s);
    assert!(!s.check_always_on(QwenEvent::Retry));
    assert!(!add(&mut s, "tool_b", json!({"step": "replay"})));
    assert!(!add(&mut s, "task_list", task_args()));
    assert!(!result(&mut s, "task_list", task_args(), "frozen board"));
}

#[test]
fn stateful_reset_clears_pair_counts() {
    let mut s = make(Some(100), false, false);
    frozen_pairs(&mut s);
    s.reset();
    assert!(!add(&mut s, "tool_b", json!({"step": "p2"})));
    assert!(!add(&mut s, "task_list", task_args()));
    assert!(!result(&mut s, "task_list", task_args(), "frozen board"));
}

/// Interleaved polls against a soft cap of 20: (fired, calls made).
fn cap_polls(
    rounds: std::ops::Range<usize>,
    s: &mut QwenService,
    board: &dyn Fn(usize) -> String,
    finished: bool,
) -> (bool, usize) {
    let mut calls = 0;
    for round in rounds {
        calls += 1;
        if poll(s) {
            return (true, calls);
        }
        calls += 1;
        if guard(s, "tool_b", json!({"step": round})) {
            return (true, calls);
        }
        if result(s, "task_list", task_args(), &board(round)) {
            return (true, calls);
        }
        if finished {
            s.check_always_on(QwenEvent::Finished);
        }
    }
    (false, calls)
}

#[test]
fn stateful_frozen_poller_halts_past_the_soft_cap() {
    for finished in [false, true] {
        let mut s = make(Some(20), false, true);
        let (fired, calls) = cap_polls(0..40, &mut s, &|_| "frozen board".into(), finished);
        assert!(fired);
        assert_eq!(s.last_loop_type(), Some(kind::CAP));
        assert!(calls <= 22, "{calls}");
    }
}

#[test]
fn stateful_thawed_board_disarms_the_cap() {
    let mut s = make(Some(20), false, true);
    let (fired, _) = cap_polls(
        0..GLOBAL_DUPLICATE_THRESHOLD,
        &mut s,
        &|_| "frozen board".into(),
        false,
    );
    assert!(!fired);
    let (fired, calls) = cap_polls(
        GLOBAL_DUPLICATE_THRESHOLD..40,
        &mut s,
        &|r| format!("thawed board v{r}"),
        false,
    );
    assert!(!fired);
    assert!(calls + 2 * GLOBAL_DUPLICATE_THRESHOLD >= 40);
}

#[test]
fn stateful_abandoned_poller_releases_the_cap() {
    let mut s = make(Some(20), false, true);
    let (fired, _) = cap_polls(0..8, &mut s, &|_| "frozen board".into(), true);
    assert!(!fired);
    for i in 0..30 {
        assert!(!guard(&mut s, "tool_c", json!({"i": i})));
        if i % 3 == 2 {
            s.check_always_on(QwenEvent::Finished);
        }
    }
    assert_eq!(s.last_loop_type(), None);
}

#[test]
fn stateful_resumed_streak_is_judged_on_fresh_evidence() {
    let mut s = service();
    for _ in 0..TOOL_CALL_LOOP_THRESHOLD - 1 {
        assert!(!poll(&mut s));
        result(&mut s, "task_list", task_args(), UNCHANGED);
    }
    assert!(!guard(&mut s, "tool_b", json!({"step": 1})));
    assert!(!poll(&mut s));
    result(&mut s, "task_list", task_args(), "board changed");
    for _ in 1..=3 {
        assert!(!poll(&mut s));
    }
    assert!(poll(&mut s));
    assert_eq!(s.last_loop_type(), Some(kind::CONSECUTIVE));
}

#[test]
fn stateful_board_quoting_a_digest_label_is_compared_whole() {
    let quoted = "deadbeef".repeat(8);
    let mut s = service();
    for i in 0..4 * TOOL_CALL_LOOP_THRESHOLD {
        assert!(!poll(&mut s));
        let board = format!(
            "board row changing {i}\nFull output sha256: {quoted}\nmore changing content {i}"
        );
        result(&mut s, "task_list", task_args(), &board);
    }
    let mut s = service();
    let board = format!("frozen board row\nFull output sha256: {quoted}\nfrozen tail");
    let mut fired = false;
    for _ in 0..TOOL_CALL_LOOP_THRESHOLD {
        fired = poll(&mut s);
        if fired {
            break;
        }
        result(&mut s, "task_list", task_args(), &board);
    }
    assert!(fired);
}

// ---- The session driver ----

fn rec(v: Value) -> Record {
    let o = obj(v);
    let s = |k: &str| o.get(k).and_then(Value::as_str).map(String::from);
    match o["type"].as_str().unwrap() {
        "user" => Record::User {
            text: s("text").unwrap_or_default(),
            prompt_id: s("prompt_id"),
        },
        "turn" => Record::Turn,
        "content" => Record::Content {
            text: s("text").unwrap(),
        },
        "thought" => Record::Thought {
            text: s("text").unwrap(),
        },
        "tool_call" => Record::ToolCall {
            name: s("name").unwrap(),
            args: obj(o["args"].clone()).into(),
            id: s("id"),
        },
        "tool_result" => Record::ToolResult {
            id: s("id"),
            name: s("name"),
            output: s("output"),
            error: o.get("error").and_then(Value::as_bool),
        },
        t => panic!("type {t}"),
    }
}

fn session(records: Vec<Value>) -> Prepared {
    let r = records
        .into_iter()
        .enumerate()
        .map(|(i, v)| (rec(v), Origin::at(0, i as u32 + 1)))
        .collect();
    Prepared::new(Arc::new(Session::from_records("t".into(), r)))
}

/// (kind, event, prompt) of every detection.
fn detect(profile: &str, p: &Prepared) -> Vec<(&'static str, u32, u32)> {
    let cfg = DetectorConfig::resolve(None, Some(profile), &[]).unwrap();
    run_checks(&cfg.checks().unwrap(), p, None)
        .into_iter()
        .map(|d| (d.kind, d.event, d.prompt))
        .collect()
}

fn call(name: &str, args: Value) -> Value {
    json!({"type": "tool_call", "name": name, "args": args})
}

fn out(text: &str) -> Value {
    json!({"type": "tool_result", "output": text})
}

#[test]
fn driver_first_detection_per_prompt_and_reset() {
    let mut r = vec![json!({"type": "user", "text": "go"})];
    for _ in 0..6 {
        r.push(call("read_file", json!({"path": "a"})));
        r.push(out("x"));
    }
    r.push(json!({"type": "user", "text": "again"}));
    for _ in 0..5 {
        r.push(call("read_file", json!({"path": "a"})));
    }
    // Event 10 is the 5th call; the 6th is ignored (sticky); the new prompt
    // resets and its own 5th call (event 19) is detected again.
    assert_eq!(
        detect("qwen", &session(r)),
        [(kind::CONSECUTIVE, 10, 1), (kind::CONSECUTIVE, 19, 2)]
    );
}

#[test]
fn driver_same_prompt_id_does_not_reset() {
    let mut r = vec![json!({"type": "user", "text": "go", "prompt_id": "p"})];
    for _ in 0..3 {
        r.push(call("grep", json!({"q": 1})));
    }
    r.push(json!({"type": "user", "text": "continue", "prompt_id": "p"}));
    for _ in 0..2 {
        r.push(call("grep", json!({"q": 1})));
    }
    assert_eq!(detect("qwen", &session(r)), [(kind::CONSECUTIVE, 7, 1)]);
}

#[test]
fn driver_heuristics_only_in_qwen_all() {
    let mut r = vec![json!({"type": "user", "text": "go"})];
    for i in 0..8 {
        r.push(call("search_code", json!({"query": i})));
        r.push(out(&format!("r{i}")));
    }
    let p = session(r);
    assert_eq!(detect("qwen", &p), []);
    // The 8th search_code call (event 16) is the same-name streak of 8.
    assert_eq!(detect("qwen-all", &p), [(kind::STAGNATION, 16, 1)]);
}

#[test]
fn driver_content_and_thoughts() {
    let mut r = vec![json!({"type": "user", "text": "go"})];
    for _ in 0..3 {
        r.push(json!({"type": "thought", "text": "**Plan** Inspect the schema."}));
    }
    assert_eq!(
        detect("qwen-all", &session(r.clone())),
        [(kind::THOUGHTS, 4, 1)]
    );
    assert_eq!(detect("qwen", &session(r)), []);
    let mut r = vec![json!({"type": "user", "text": "go"})];
    for _ in 0..10 {
        r.push(json!({"type": "content", "text": repetitive(1, 50)}));
    }
    assert_eq!(detect("qwen-all", &session(r)), [(kind::CHANTING, 11, 1)]);
}

#[test]
fn driver_task_list_results_keep_polling_alive() {
    let mut r = vec![json!({"type": "user", "text": "go"})];
    for i in 0..8 {
        r.push(call("task_list", json!({})));
        r.push(out(&format!("board v{i}")));
    }
    assert_eq!(detect("qwen", &session(r)), []);
    let mut r = vec![json!({"type": "user", "text": "go"})];
    for _ in 0..8 {
        r.push(call("task_list", json!({})));
        r.push(out("frozen"));
    }
    assert_eq!(detect("qwen", &session(r)), [(kind::CONSECUTIVE, 10, 1)]);
}

#[test]
fn driver_profiles_differ_only_in_the_gate() {
    let a = DetectorConfig::resolve(None, Some("qwen"), &[]).unwrap();
    let b = DetectorConfig::resolve(None, Some("qwen-all"), &[]).unwrap();
    let diff: Vec<&String> = a
        .params
        .0
        .iter()
        .filter(|(k, v)| b.params.0.get(*k) != Some(v))
        .map(|(k, _)| k)
        .collect();
    assert_eq!(diff, ["skip_loop_detection"]);
}

// ---- PR #9668: long verbatim repetition (issue #1775), its own test cases ----
//
// From `describe('Long verbatim repetition loops (issue #1775)')` and the fire
// offsets of `describe('Truncation hysteresis')` (recorded by the PR's author
// on the per-event trim the port keeps). Not ported: the Retry/ModelFallback
// resets of the replayed stream (a later change; canonical sessions carry no
// retries) and the debug-log excerpt (telemetry).

const DELTA: usize = 17;

const CHANTED_UNIT: &str = "The issue might be that the API call is not being made properly \
when the switch is toggled. Let me make sure the fetchPublicRecipes \
function is called correctly with the right parameters. The issue \
might be that the API call is not being made with the correct \
parameters when the switch is toggled.";

/// `qwen-all-2026-08`'s service (`makeConfig(..., skipLoopDetection=false)`).
fn latest() -> QwenService {
    QwenService::new(QwenSettings::profile("qwen-all-2026-08").unwrap())
}

/// Pieces of `text` of `size` UTF-16 units (the tests' text is ASCII).
fn pieces(text: &str, size: usize) -> impl Iterator<Item = &str> {
    (0..text.len())
        .step_by(size)
        .map(move |i| &text[i..(i + size).min(text.len())])
}

fn stream_thoughts(s: &mut QwenService, text: &str, size: usize) -> bool {
    pieces(text, size).any(|p| thought(s, "", p))
}

fn stream_content(s: &mut QwenService, text: &str, size: usize) -> bool {
    pieces(text, size).any(|p| self::text(s, p))
}

/// `makeAperiodicUnit(length, seed)`: an LCG over lowercase letters.
fn aperiodic(len: usize, seed: u32) -> String {
    let mut state = (seed + 1).wrapping_mul(2_654_435_761);
    if state == 0 {
        state = 1;
    }
    let mut out = String::new();
    while out.len() < len {
        state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        out.push(char::from(97 + ((state >> 16) % 26) as u8));
    }
    out
}

/// `variedText(len, seed)`: JavaScript's double arithmetic (the product
/// exceeds 2^53, so it rounds as in Node).
fn varied(len: usize, seed: u32) -> String {
    const WORDS: [&str; 20] = [
        "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
        "juliet", "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra",
        "tango",
    ];
    let mut out = String::new();
    let mut x = f64::from(seed) + 1.0;
    while out.len() < len {
        x = (x * 1_103_515_245.0 + 12_345.0) % 2_147_483_648.0;
        out.push_str(WORDS[(x % 20.0) as usize]);
        out.push_str(&((x % 97.0) as u32).to_string());
        out.push(' ');
    }
    out.truncate(len);
    out
}

/// The `Step ${i}: consider aspect ${i*7+3} of the problem. ` filler.
fn steps(n: usize) -> String {
    (0..n)
        .map(|i| format!("Step {i}: consider aspect {} of the problem. ", i * 7 + 3))
        .collect()
}

#[test]
fn long_unit_shape_sanity() {
    assert_ne!(CHANTED_UNIT.len() % DELTA, 0);
    assert!(CHANTED_UNIT.len() as f64 > CONTENT_CHUNK_SIZE as f64 * 1.5);
    assert_eq!(CHANTED_UNIT.len(), 298);
}

#[test]
fn long_chant_in_the_reasoning_channel() {
    let mut s = latest();
    assert!(stream_thoughts(&mut s, &CHANTED_UNIT.repeat(40), DELTA));
    assert_eq!(s.last_loop_type(), Some(kind::CHANTING));
    // Before the PR, reasoning never reached the content check.
    let mut s = make(Some(100), false, false);
    assert!(!stream_thoughts(&mut s, &CHANTED_UNIT.repeat(40), DELTA));
}

#[test]
fn long_chant_on_the_content_channel() {
    let mut s = latest();
    assert!(stream_content(&mut s, &CHANTED_UNIT.repeat(40), DELTA));
    assert_eq!(s.last_loop_type(), Some(kind::CHANTING));
    // The clustered rule alone never sees a 298-unit period.
    let mut s = make(Some(100), false, false);
    assert!(!stream_content(&mut s, &CHANTED_UNIT.repeat(40), DELTA));
}

#[test]
fn long_chant_of_an_even_longer_unit() {
    let unit = "Now I'm implementing the fix by modifying the version comparison \
logic to use the API's supportedIosVersions field when available, \
falling back to the static table only if the API does not have \
that information. I realize the core issue: if the device is \
already on the newest major release and the table claims a lower \
maximum, the comparison correctly evaluates to false. The real \
problem is that the static table values are stale and do not \
match what the API reports, so I need to prioritize the API data.";
    assert!(unit.len() > 500);
    assert_ne!(unit.len() % DELTA, 0);
    let mut s = latest();
    assert!(stream_thoughts(&mut s, &unit.repeat(20), DELTA));
}

#[test]
fn long_chant_of_mid_length_units() {
    for len in [100, 150, 200] {
        let unit = aperiodic(len, len as u32);
        assert_ne!(unit.len() % DELTA, 0);
        let mut s = latest();
        assert!(stream_content(&mut s, &unit.repeat(40), DELTA), "{len}");
        assert_eq!(s.last_loop_type(), Some(kind::CHANTING));
    }
}

#[test]
fn long_chant_of_units_too_long_for_five_occurrences() {
    for len in [1000, 1500] {
        let unit = aperiodic(len, len as u32);
        assert_ne!(unit.len() % DELTA, 0);
        let mut s = latest();
        assert!(stream_content(&mut s, &unit.repeat(30), DELTA), "{len}");
        assert_eq!(s.last_loop_type(), Some(kind::CHANTING));
    }
}

#[test]
fn long_chant_short_run_in_fresh_history_passes() {
    let mut s = latest();
    assert!(!stream_content(
        &mut s,
        &aperiodic(1000, 7).repeat(3),
        DELTA
    ));
}

#[test]
fn long_chant_after_a_long_varied_turn_fires_at_the_fifth_occurrence() {
    let mut s = latest();
    let filler = steps(100);
    assert!(filler.len() > 2500);
    let unit = aperiodic(700, 42);
    assert_ne!(unit.len() % DELTA, 0);
    assert!(!stream_content(&mut s, &filler, DELTA));
    let chant = unit.repeat(20);
    let at = (0..chant.len())
        .step_by(DELTA)
        .find(|&i| text(&mut s, &chant[i..(i + DELTA).min(chant.len())]))
        .map(|i| i + DELTA)
        .expect("detected");
    assert_eq!(s.last_loop_type(), Some(kind::CHANTING));
    assert!(at > 4 * unit.len());
    assert!(at <= 4 * unit.len() + CONTENT_CHUNK_SIZE + DELTA);
}

#[test]
fn long_varied_reasoning_stream_passes() {
    let mut s = latest();
    assert!(!stream_thoughts(&mut s, &steps(200), DELTA));
    assert!(s.logged().is_empty());
}

#[test]
fn equal_stride_with_varying_text_between_passes() {
    let anchor = &"The quick brown fox jumps over the lazy dog again! "[..CONTENT_CHUNK_SIZE];
    // `filler(seed, 150)`: the same length for every seed, aperiodic inside.
    let filler = |seed: u64, len: usize| {
        let mut state = (((seed + 1) * 2_654_435_761) % (1 << 32)) as u32;
        let mut out = format!("Varying filler number {seed} ");
        while out.len() < len {
            state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            out.push(char::from(97 + ((state >> 16) % 26) as u8));
        }
        out
    };
    let t: String = (0..6)
        .map(|i| format!("{anchor}{}", filler(i, 150)))
        .collect();
    let mut s = latest();
    assert!(!stream_content(&mut s, &t, CONTENT_CHUNK_SIZE));
    assert!(s.logged().is_empty());
}

#[test]
fn fewer_than_five_occurrences_of_a_long_unit_pass() {
    let mut s = latest();
    assert!(!stream_content(&mut s, &CHANTED_UNIT.repeat(4), DELTA));
}

#[test]
fn a_fenced_thought_does_not_silence_visible_chanting() {
    let mut s = latest();
    thought(&mut s, "", "Let me look at this snippet:\n```");
    assert!(stream_content(&mut s, &CHANTED_UNIT.repeat(40), DELTA));
    assert_eq!(s.last_loop_type(), Some(kind::CHANTING));
}

#[test]
fn a_reasoning_chant_with_list_markers_is_detected() {
    let unit = "Review the migration plan:\n- check rollback safety\n- verify indexes\n- confirm the cache invalidation path\n";
    assert!(unit.len() as f64 > CONTENT_CHUNK_SIZE as f64 * 1.5);
    assert_ne!(unit.len() % DELTA, 0);
    let mut s = latest();
    assert!(stream_thoughts(&mut s, &unit.repeat(60), DELTA));
    assert_eq!(s.last_loop_type(), Some(kind::CHANTING));
}

#[test]
fn repetitions_far_apart_with_varying_filler_pass() {
    // `should not detect a loop if repetitions are very far apart` after the
    // PR: a fresh filler each cycle (the test's random one, fixed here).
    let mut s = latest();
    let mut hit = false;
    for i in 0..CONTENT_LOOP_THRESHOLD {
        // The original keeps only the filler's answer, as here.
        text(&mut s, &repetitive(1, CONTENT_CHUNK_SIZE));
        hit = text(&mut s, &aperiodic(500, 1000 + i as u32));
    }
    assert!(!hit);
    assert!(s.logged().is_empty());
}

#[test]
fn continuous_chant_fires_where_the_continuation_case_says() {
    // `keeps accumulated evidence across a continuation retry`: the first
    // 1192 units pass and the next 100 fire (nothing is re-streamed).
    let unit = varied(298, 21);
    let chant = unit.repeat(6);
    let mut s = latest();
    assert!(!stream_thoughts(&mut s, &chant[..1192], DELTA));
    assert!(stream_thoughts(&mut s, &chant[1192..1292], DELTA));
    assert_eq!(s.last_loop_type(), Some(kind::CHANTING));
}

/// `fireOffset(text)`: units streamed as content when detection fired.
fn fire_offset(t: &str) -> Option<usize> {
    let mut s = latest();
    let mut streamed = 0;
    for p in pieces(t, DELTA) {
        streamed += p.len();
        if text(&mut s, p) {
            return Some(streamed);
        }
    }
    None
}

#[test]
fn fire_offsets_recorded_by_the_original() {
    let (u300, u1200, u1350) = (CHANTED_UNIT, varied(1200, 7), varied(1350, 9));
    assert_eq!((u1200.len(), u1350.len()), (1200, 1350));
    assert_eq!(fire_offset(&u300.repeat(60)), Some(1258));
    assert_eq!(fire_offset(&u1200.repeat(12)), Some(4012));
    assert_eq!(
        fire_offset(&(varied(3000, 3) + &u1200.repeat(12))),
        Some(7004)
    );
    assert_eq!(fire_offset(&u1350.repeat(12)), Some(4012));
    assert_eq!(
        fire_offset(&(varied(4500, 5) + &u300.repeat(60))),
        Some(5763)
    );
    assert_eq!(
        fire_offset(&(varied(200, 11) + &u1200.repeat(12))),
        Some(4216)
    );
    assert_eq!(fire_offset(&u1200.repeat(4)), Some(4012));
    assert_eq!(fire_offset(&varied(30000, 13)), None);
}

#[test]
fn driver_reasoning_records_feed_the_content_check() {
    // One thought record per 17-unit piece of a 300-letter chant, as a
    // model's reasoning arrives; the clustered rule and the thought rule both
    // miss it. Event 1 is the prompt, so piece k is event k + 2; the unit's
    // 5th occurrence of its first window completes at unit 4 * 300 + 50.
    let unit = aperiodic(300, 5);
    let mut r = vec![json!({"type": "user", "text": "go"})];
    for p in pieces(&unit.repeat(40), DELTA) {
        r.push(json!({"type": "thought", "text": p}));
    }
    let p = session(r);
    assert_eq!(detect("qwen-all", &p), []);
    assert_eq!(detect("qwen", &p), []);
    let fired = (4 * 300 + CONTENT_CHUNK_SIZE).div_ceil(DELTA) - 1;
    assert_eq!(
        detect("qwen-all-2026-08", &p),
        [(kind::CHANTING, fired as u32 + 2, 1)]
    );
}

#[test]
fn driver_thought_records_are_trimmed_before_they_are_fed() {
    // parseThought trims each record, so a chant cut into pieces at spaces
    // loses them and is periodic no more: the same text as content fires.
    let mut r = vec![json!({"type": "user", "text": "go"})];
    let mut c = r.clone();
    for p in pieces(&CHANTED_UNIT.repeat(40), DELTA) {
        r.push(json!({"type": "thought", "text": p}));
        c.push(json!({"type": "content", "text": p}));
    }
    assert_eq!(detect("qwen-all-2026-08", &session(r)), []);
    assert_eq!(detect("qwen-all-2026-08", &session(c)).len(), 1);
}

#[test]
fn driver_2026_08_profile_changes_only_the_pr_settings() {
    let a = DetectorConfig::resolve(None, Some("qwen-all"), &[]).unwrap();
    let b = DetectorConfig::resolve(None, Some("qwen-all-2026-08"), &[]).unwrap();
    let mut diff: Vec<&String> = a
        .params
        .0
        .iter()
        .filter(|(k, v)| b.params.0.get(*k) != Some(v))
        .map(|(k, _)| k)
        .collect();
    diff.sort();
    assert_eq!(
        diff,
        ["content_max_history", "periodic_check", "reasoning_content"]
    );
}

/// Fed record by record (the live Detector's stream: no shared repeat keys,
/// each call's key written as it comes; a result reads its call at the
/// call's record), the service fires what a replay fires, every rule, across
/// prompts (two of them share a prompt id, so the second goes on the first's
/// state): result-aware stateful streaks, results answering by id, by name
/// and nothing, thoughts and chanting.
#[test]
fn a_live_feed_fires_what_a_replay_fires() {
    use crate::detect::ParamValue;
    let mut r = Vec::new();
    let mut n = 0;
    let mut call_answered = |r: &mut Vec<Value>, name: &str, args: Value, output: &str| {
        n += 1;
        let id = format!("c{n}");
        r.push(json!({"type": "tool_call", "name": name, "args": args, "id": id}));
        r.push(json!({"type": "tool_result", "id": "nobody", "output": "x"}));
        r.push(json!({"type": "tool_result", "id": id, "output": output}));
    };
    for p in 0..9 {
        let id = if p == 8 { 7 } else { p };
        r.push(json!({"type": "user", "text": "go", "prompt_id": format!("p{id}")}));
        for i in 0..10 {
            r.push(json!({"type": "turn"}));
            match p {
                // A stateful read whose board changes, then stays.
                0 => {
                    let board = if i < 3 {
                        format!("board {i}")
                    } else {
                        "same".into()
                    };
                    call_answered(&mut r, "task_list", json!({}), &board);
                }
                1 => r.push(json!({"type": "thought", "text": "**Plan** read it again"})),
                2 => r.push(json!({"type": "content", "text": "I will try again now. "})),
                // Read-like calls after one that is not.
                3 => {
                    let name = if i == 0 { "edit" } else { "read_file" };
                    call_answered(&mut r, name, json!({"p": i}), "r");
                }
                4 => call_answered(&mut r, "grep", json!({"q": i}), "none"),
                // Alternating calls, each result answered by name.
                5 => {
                    let name = if i % 2 == 0 { "glob" } else { "edit" };
                    r.push(call(name, json!({"p": 1})));
                    r.push(json!({"type": "tool_result", "name": name, "output": "r"}));
                }
                6 => {
                    r.push(call("run_shell_command", json!({"command": "git status"})));
                    r.push(out("clean"));
                }
                _ => call_answered(&mut r, "edit", json!({"p": i % 4}), "ok"),
            }
        }
    }
    let s = session(r).session.clone();
    let mut cfgs = Vec::new();
    for profile in ["qwen", "qwen-all", "qwen-all-2026-08"] {
        for (calls, dup, thoughts, chant) in [(5, 6, 3, 10), (3, 2, 2, 3), (9, 4, 9, 2)] {
            cfgs.push((
                profile,
                vec![
                    ("tool_call_threshold".to_string(), ParamValue::Int(calls)),
                    (
                        "global_duplicate_threshold".to_string(),
                        ParamValue::Int(dup),
                    ),
                    ("thought_threshold".to_string(), ParamValue::Int(thoughts)),
                    ("content_loop_threshold".to_string(), ParamValue::Int(chant)),
                    ("content_chunk_size".to_string(), ParamValue::Int(20)),
                    ("shell_stagnation_threshold".to_string(), ParamValue::Int(4)),
                    ("max_tool_calls_per_turn".to_string(), ParamValue::Int(12)),
                    ("read_threshold".to_string(), ParamValue::Int(5)),
                    ("stagnation_threshold".to_string(), ParamValue::Int(8)),
                ],
            ));
        }
    }
    let kinds = super::stream_equals_run_kinds(&s, &cfgs);
    let want = [
        kind::STAGNATION,
        kind::ALTERNATING,
        kind::CHANTING,
        kind::CONSECUTIVE,
        kind::GLOBAL,
        kind::READ,
        kind::THOUGHTS,
        kind::SHELL,
        kind::CAP,
    ];
    assert_eq!(kinds.keys().copied().collect::<Vec<_>>(), want);
}
