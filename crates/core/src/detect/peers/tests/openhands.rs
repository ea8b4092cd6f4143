//! OpenHands' own tests/unit/controller/test_is_stuck.py (`TestStuckDetector`),
//! ported to the V0 port, plus V1 SDK cases.

use crate::detect::peers::openhands::{
    is_stuck_v0, is_stuck_v1, OhEvent, Source, StuckAnalysis, Thresholds, V1Event,
};
use serde_json::json;

fn user(c: &str) -> OhEvent {
    OhEvent::Message {
        source: Some(Source::User),
        content: c.into(),
        wait_for_response: false,
    }
}
fn agent(c: &str) -> OhEvent {
    OhEvent::Message {
        source: Some(Source::Agent),
        content: c.into(),
        wait_for_response: false,
    }
}
/// A `MessageAction` whose `_source` was never set.
fn message(c: &str) -> OhEvent {
    OhEvent::Message {
        source: None,
        content: c.into(),
        wait_for_response: false,
    }
}
fn cmd(c: &str) -> OhEvent {
    OhEvent::CmdRun {
        command: c.into(),
        thought: String::new(),
    }
}
fn cmd_obs(c: &str, content: &str) -> OhEvent {
    OhEvent::CmdOutput {
        command: c.into(),
        exit_code: 0,
        content: content.into(),
    }
}
fn read(p: &str) -> OhEvent {
    OhEvent::FileRead { path: p.into() }
}
fn read_obs(content: &str, p: &str) -> OhEvent {
    OhEvent::FileReadOutput {
        content: content.into(),
        path: p.into(),
    }
}
fn err(c: &str) -> OhEvent {
    OhEvent::Error { content: c.into() }
}
fn cond() -> OhEvent {
    OhEvent::Condensation {
        content: "Trimming prompt to meet context window limitations".into(),
    }
}
const N: OhEvent = OhEvent::NullObservation;

fn analysis(t: &'static str, times: u32, start: usize) -> Option<StuckAnalysis> {
    Some(StuckAnalysis {
        loop_type: t,
        loop_repeat_times: times,
        loop_start_idx: start,
    })
}

const CODE: &str = "\nedit_file_by_replace(\n    'book_store.py',\n    to_replace=\"\"\"def total(basket):\n    if not basket:\n        return 0\n";
const JUPYTER: &str = "\n[Jupyter current working directory:\n[Jupyter Python interpreter:";

fn syntax_error_events(msg: &str, random_line: bool, incidents: usize) -> Vec<OhEvent> {
    let mut h = Vec::new();
    for i in 0..incidents {
        h.push(OhEvent::IPythonRunCell {
            code: CODE.into(),
            thought: String::new(),
        });
        let number = if random_line {
            ((i + 1) * 10).to_string()
        } else {
            "42".into()
        };
        let extra = if random_line {
            "\n".repeat(i + 1)
        } else {
            String::new()
        };
        h.push(OhEvent::IPythonOutput {
            content: format!(
                "  Cell In[1], line {number}\nto_replace=\"\"\"def largest(min_factor, max_factor):\n            ^\n{msg}{extra}{JUPYTER}"
            ),
            code: CODE.into(),
        });
    }
    h
}

fn unterminated_events(random_line: bool, incidents: usize) -> Vec<OhEvent> {
    let mut h = Vec::new();
    for i in 0..incidents {
        h.push(OhEvent::IPythonRunCell {
            code: CODE.into(),
            thought: String::new(),
        });
        let n = if random_line {
            ((i + 1) * 10).to_string()
        } else {
            "1".into()
        };
        h.push(OhEvent::IPythonOutput {
            content: format!(
                "print(\"  Cell In[1], line {n}\nhello\n       ^\nSyntaxError: unterminated string literal (detected at line {n}){JUPYTER}"
            ),
            code: CODE.into(),
        });
    }
    h
}

const COMMA: &str = "SyntaxError: invalid syntax. Perhaps you forgot a comma?";
const INCOMPLETE: &str = "SyntaxError: incomplete input";

#[test]
fn history_too_short() {
    let h = vec![
        user("Hello"),
        N,
        cmd("ls"),
        cmd_obs("ls", "file1.txt\nfile2.txt"),
    ];
    assert_eq!(is_stuck_v0(&h, true), None);
}

#[test]
fn interactive_mode_resets_after_user_message() {
    let mut h = Vec::new();
    for _ in 0..4 {
        h.push(cmd("ls"));
        h.push(cmd_obs("ls", ""));
    }
    assert!(is_stuck_v0(&h, true).is_some());
    assert!(is_stuck_v0(&h, false).is_some());
    h.push(user("Hello"));
    assert!(is_stuck_v0(&h, false).is_none());
    assert!(is_stuck_v0(&h, true).is_some());
    for _ in 0..2 {
        h.push(cmd("ls"));
        h.push(cmd_obs("ls", ""));
    }
    assert!(is_stuck_v0(&h, false).is_none());
    for _ in 0..2 {
        h.push(cmd("ls"));
        h.push(cmd_obs("ls", ""));
    }
    assert!(is_stuck_v0(&h, false).is_some());
}

#[test]
fn repeating_action_observation() {
    let mut h = vec![message("Hello"), N];
    for _ in 0..2 {
        h.push(cmd("ls"));
        h.push(cmd_obs("ls", ""));
    }
    h.push(user("Done"));
    h.push(N);
    assert_eq!(is_stuck_v0(&h, true), None);
    h.push(cmd("ls"));
    h.push(cmd_obs("ls", ""));
    assert_eq!(h.len(), 10);
    assert_eq!(is_stuck_v0(&h, true), None);
    h.push(cmd("ls"));
    h.push(cmd_obs("ls", ""));
    assert_eq!(h.len(), 12);
    assert_eq!(
        is_stuck_v0(&h, true),
        analysis("repeating_action_observation", 4, 1)
    );
}

#[test]
fn repeating_action_error() {
    let h = vec![
        message("Hello"),
        N,
        cmd("invalid_command"),
        err("Command not found"),
        cmd("invalid_command"),
        err("Command still not found or another error"),
        user("Done"),
        N,
        cmd("invalid_command"),
        err("Different error"),
        cmd("invalid_command"),
        err("Command not found"),
    ];
    assert_eq!(
        is_stuck_v0(&h, true),
        analysis("repeating_action_error", 3, 1)
    );
}

#[test]
fn invalid_syntax_error() {
    assert!(is_stuck_v0(&syntax_error_events(COMMA, false, 4), true).is_some());
}

#[test]
fn not_stuck_invalid_syntax_error_random_lines() {
    assert!(is_stuck_v0(&syntax_error_events(COMMA, true, 4), true).is_none());
}

#[test]
fn not_stuck_invalid_syntax_error_only_three_incidents() {
    assert!(is_stuck_v0(&syntax_error_events(COMMA, true, 3), true).is_none());
}

#[test]
fn incomplete_input_error() {
    assert!(is_stuck_v0(&syntax_error_events(INCOMPLETE, false, 4), true).is_some());
}

#[test]
fn not_stuck_incomplete_input_error() {
    assert!(is_stuck_v0(&syntax_error_events(INCOMPLETE, true, 4), true).is_none());
}

#[test]
fn not_stuck_unterminated_string_error_random_lines() {
    assert!(is_stuck_v0(&unterminated_events(true, 4), true).is_none());
}

#[test]
fn not_stuck_unterminated_string_error_only_two_incidents() {
    assert!(is_stuck_v0(&unterminated_events(false, 2), true).is_none());
}

#[test]
fn unterminated_string_error() {
    assert!(is_stuck_v0(&unterminated_events(false, 4), true).is_some());
}

#[test]
fn not_stuck_syntax_error_not_at_end() {
    let code = "print(\"hello";
    let outs = [
        "print(\"hello\n       ^\nSyntaxError: unterminated string literal (detected at line 1)\nThis is some additional output",
        "print(\"hello\n       ^\nSyntaxError: unterminated string literal (detected at line 1)\nToo much output here on and on",
        "print(\"hello\n       ^\nSyntaxError: unterminated string literal (detected at line 3)\nEnough",
        "print(\"hello\n       ^\nSyntaxError: unterminated string literal (detected at line 2)\nLast line of output",
    ];
    let mut h = Vec::new();
    for o in outs {
        h.push(OhEvent::IPythonRunCell {
            code: code.into(),
            thought: String::new(),
        });
        h.push(OhEvent::IPythonOutput {
            content: o.into(),
            code: code.into(),
        });
    }
    assert!(is_stuck_v0(&h, true).is_none());
}

#[test]
fn repeating_action_observation_pattern() {
    let files = "file1.txt\nfile2.txt";
    let mut h = vec![user("Come on"), N];
    for _ in 0..2 {
        h.extend([
            cmd("ls"),
            cmd_obs("ls", files),
            read("file1.txt"),
            read_obs("File content", "file1.txt"),
        ]);
    }
    h.extend([user("Come on"), N]);
    h.extend([
        cmd("ls"),
        cmd_obs("ls", files),
        read("file1.txt"),
        read_obs("File content", "file1.txt"),
    ]);
    assert_eq!(
        is_stuck_v0(&h, true),
        analysis("repeating_action_observation_pattern", 3, 0)
    );
}

#[test]
fn not_stuck() {
    let h = vec![
        message("Hello"),
        N,
        cmd("ls"),
        cmd_obs("ls", "file1.txt\nfile2.txt"),
        read("file1.txt"),
        read_obs("File content", "file1.txt"),
        cmd("pwd"),
        cmd_obs("pwd", "/home/user"),
        read("file2.txt"),
        read_obs("Another file content", "file2.txt"),
        user("Done"),
        N,
        cmd("pwd"),
        cmd_obs("pwd", "/home/user"),
        read("file2.txt"),
        read_obs("Another file content", "file2.txt"),
    ];
    assert!(is_stuck_v0(&h, true).is_none());
}

#[test]
fn monologue() {
    let x = "I'm doing well, thanks for asking.";
    let mut h = vec![
        user("Hi there!"),
        agent("Hi there!"),
        user("How are you?"),
        OhEvent::CmdRun {
            command: "echo 42".into(),
            thought: "I'm not stuck, he's stuck".into(),
        },
        agent(x),
        agent(x),
        agent(x),
    ];
    assert_eq!(is_stuck_v0(&h, true), analysis("monologue", 3, 2));
    h.push(OhEvent::CmdOutput {
        command: "storybook".into(),
        exit_code: 0,
        content: "OK, I was stuck, but no more.".into(),
    });
    h.push(agent(x));
    h.push(agent(x));
    assert!(is_stuck_v0(&h, true).is_none());
}

#[test]
fn context_window_error_loop() {
    let mut h = vec![user("Hello"), N];
    h.extend((0..10).map(|_| cond()));
    assert_eq!(
        is_stuck_v0(&h, true),
        analysis("context_window_error", 2, 0)
    );
}

#[test]
fn not_stuck_context_window_error_with_other_events() {
    let mut h = vec![user("Hello"), N];
    for i in 0..10 {
        h.push(cond());
        if i < 9 {
            h.push(cmd(&format!("ls {i}")));
            h.push(cmd_obs(&format!("ls {i}"), "file1.txt\nfile2.txt"));
            if i % 2 == 0 {
                h.push(read(&format!("file{i}.txt")));
                h.push(read_obs(
                    &format!("File content {i}"),
                    &format!("file{i}.txt"),
                ));
            }
        }
    }
    assert!(is_stuck_v0(&h, true).is_none());
}

#[test]
fn not_stuck_context_window_error_less_than_ten() {
    let mut h = vec![user("Hello"), N];
    h.extend((0..9).map(|_| cond()));
    assert!(is_stuck_v0(&h, true).is_none());
}

#[test]
fn context_window_error_with_user_messages() {
    let mut h = vec![user("Hello"), N];
    for i in 0..10 {
        h.push(cond());
        if i < 9 {
            h.push(user(&format!("Please continue {i}")));
            h.push(N);
        }
    }
    assert_eq!(
        is_stuck_v0(&h, true),
        analysis("context_window_error", 2, 0)
    );
}

#[test]
fn not_stuck_context_window_error_in_non_headless() {
    let mut h = vec![user("Hello"), N];
    h.extend((0..10).map(|_| cond()));
    h.extend([user("Please continue"), N]);
    assert!(is_stuck_v0(&h, true).is_some());
    assert!(is_stuck_v0(&h, false).is_none());
}

fn action(name: &str) -> V1Event {
    V1Event::Action {
        tool_name: name.into(),
        args: json!({"command": "ls"}).into(),
        thought: String::new(),
    }
}
fn observation(content: &str) -> V1Event {
    V1Event::Observation {
        tool_name: "terminal".into(),
        content: content.into(),
    }
}

#[test]
fn v1_scenarios() {
    let th = Thresholds::default();
    // 4 identical action/observation pairs.
    let mut e = vec![V1Event::UserMessage("go".into())];
    for _ in 0..4 {
        e.extend([action("terminal"), observation("out")]);
    }
    assert_eq!(is_stuck_v1(&e, &th), Some("repeating_action_observation"));
    // A user message resets the window.
    e.push(V1Event::UserMessage("again".into()));
    assert_eq!(is_stuck_v1(&e, &th), None);
    // 3 identical actions answered by errors.
    for i in 0..3 {
        e.extend([
            action("terminal"),
            V1Event::AgentError {
                error: format!("e{i}"),
            },
        ]);
    }
    assert_eq!(is_stuck_v1(&e, &th), Some("repeating_action_error"));
    // Monologue: 3 agent messages in a row, no equality needed.
    let e = vec![
        V1Event::UserMessage("go".into()),
        V1Event::AgentMessage("a".into()),
        V1Event::AgentMessage("b".into()),
        V1Event::AgentMessage("c".into()),
    ];
    assert_eq!(is_stuck_v1(&e, &th), Some("monologue"));
    // Alternating pattern over 6 actions and 6 observations.
    let mut e = vec![V1Event::UserMessage("go".into())];
    for _ in 0..3 {
        e.extend([action("a"), observation("x"), action("b"), observation("y")]);
    }
    assert_eq!(
        is_stuck_v1(&e, &th),
        Some("repeating_action_observation_pattern")
    );
}

// The family fed live.

use crate::detect::{run_checks, DetectorConfig, Prepared};
use crate::event::Record;

fn oh_user() -> Record {
    Record::User {
        text: "go".into(),
        prompt_id: None,
    }
}

/// A user record, then `n` steps of the same shell call and output, then `tail`.
fn same_steps_then(n: usize, tail: Vec<Record>) -> std::sync::Arc<crate::event::Session> {
    let mut r = vec![oh_user()];
    for _ in 0..n {
        r.extend([
            Record::Turn,
            Record::ToolCall {
                name: "bash".into(),
                args: Box::new(super::obj(json!({"command": "ls"}))),
                id: None,
            },
            Record::ToolResult {
                id: None,
                name: None,
                output: Some("same".into()),
                error: None,
            },
        ]);
    }
    r.extend(tail);
    super::records(r)
}

/// `profile` on `s` fed live: the detections pushed while feeding (with the
/// record that pushed them) and at the end; they equal the replay's.
fn fed(
    profile: &str,
    s: &crate::event::Session,
) -> (Vec<(usize, u32)>, Vec<u32>, Vec<crate::detect::Detection>) {
    let cfg = DetectorConfig::resolve(None, Some(profile), &[]).unwrap();
    let checks = cfg.checks().unwrap();
    let want = run_checks(
        &checks,
        &Prepared::new(std::sync::Arc::new(s.clone())),
        None,
    );
    let (at_feed, fin) = super::fed_at(checks[0].as_ref(), s);
    let mut all: Vec<_> = at_feed.iter().map(|x| x.1.clone()).collect();
    all.extend(fin.iter().cloned());
    assert_eq!(crate::detect::merge(vec![all]), want, "{profile}");
    (
        at_feed.iter().map(|(at, d)| (*at, d.event)).collect(),
        fin.iter().map(|d| d.event).collect(),
        want,
    )
}

/// The V1 SDK checks once per agent step, after its last event: fed live,
/// the check of the step's last event waits for the record that starts the
/// next step (a turn or a user message), and the session's end checks the
/// step still open.
#[test]
fn v1_checks_a_step_when_the_next_starts_or_the_session_ends() {
    for profile in ["openhands-v1", "openhands-v1-2026-08"] {
        // The 4th same step: the repeated action and observation, at its result.
        let s = same_steps_then(4, vec![]);
        let (at_feed, fin, want) = fed(profile, &s);
        assert!(
            !want.is_empty() && want.iter().all(|d| d.event == 13),
            "{profile} {want:?}"
        );
        assert!(at_feed.is_empty(), "{profile}: the step is open");
        assert!(fin.iter().all(|e| *e == 13), "{profile}: the end checks it");
        for next in [Record::Turn, oh_user()] {
            let s = same_steps_then(4, vec![next.clone()]);
            let (at_feed, fin, want) = fed(profile, &s);
            assert!(!want.is_empty());
            assert!(
                at_feed.iter().all(|x| *x == (14, 13)),
                "{profile} {next:?}: {at_feed:?}"
            );
            assert_eq!(at_feed.len(), want.len());
            assert!(fin.is_empty());
        }
    }
}

/// V0 checks after every event, but an agent message is the last `content`
/// record of a turn without calls: it is mapped (and checked) once the turn
/// has ended. Three equal messages are a monologue.
#[test]
fn v0_maps_a_turns_message_when_the_turn_ends() {
    let turns = |tail: Vec<Record>| {
        let mut r = vec![oh_user()];
        for _ in 0..3 {
            r.extend([
                Record::Turn,
                Record::Content {
                    text: "I will wait.".into(),
                },
            ]);
        }
        r.extend(tail);
        super::records(r)
    };
    let (at_feed, fin, want) = fed("openhands-v0", &turns(vec![]));
    assert_eq!(
        want.iter().map(|d| d.kind).collect::<Vec<_>>(),
        ["monologue"]
    );
    assert!(at_feed.is_empty());
    assert_eq!(fin, [7]);
    let (at_feed, fin, _) = fed("openhands-v0", &turns(vec![Record::Turn]));
    assert_eq!(at_feed, [(8, 7)]);
    assert!(fin.is_empty());
    // A user record settles what came before it (the check after the user
    // message, still a monologue, is pushed there too).
    let (at_feed, fin, _) = fed("openhands-v0", &turns(vec![oh_user()]));
    assert_eq!(at_feed, [(8, 7), (8, 8)]);
    assert!(fin.is_empty());
    // More text in the turn: its message is the text joined, no monologue.
    let (at_feed, fin, want) = fed(
        "openhands-v0",
        &turns(vec![
            Record::Content {
                text: " Still.".into(),
            },
            Record::Turn,
        ]),
    );
    assert!(want.is_empty() && at_feed.is_empty() && fin.is_empty());
}

/// An event compared with itself is equal, as compared with its copy (the
/// shortcut `eq_no_pid` takes for the same event), but for an edit cell of
/// fewer than three lines, which is not even equal to itself.
#[test]
fn an_event_equals_itself_as_it_equals_its_copy() {
    use crate::detect::peers::openhands::eq_no_pid;
    let events = [
        user("a"),
        agent("a"),
        cmd("ls"),
        cmd_obs("ls", "x"),
        read("p"),
        read_obs("x", "p"),
        err("e"),
        OhEvent::Mcp {
            name: "t".into(),
            arguments: json!({"a": [1, 1.5, {"b": null}], "c": true}).into(),
            thought: "t".into(),
        },
        OhEvent::McpOutput {
            content: "o".into(),
            name: "t".into(),
            arguments: json!({"a": 2.0}).into(),
        },
        OhEvent::IPythonRunCell {
            code: "edit_file_by_replace(".into(),
            thought: String::new(),
        },
        OhEvent::IPythonRunCell {
            code: "edit_file_by_replace(\n1\n2".into(),
            thought: String::new(),
        },
        OhEvent::Condensation {
            content: "c".into(),
        },
        OhEvent::NullAction,
        OhEvent::NullObservation,
    ];
    for e in &events {
        assert_eq!(eq_no_pid(e, e), eq_no_pid(e, &e.clone()), "{e:?}");
    }
}

/// The newest positions on the stack are the newest collected.
#[test]
fn newest_positions_are_the_last_reversed() {
    use crate::detect::peers::openhands::newest;
    let p: Vec<usize> = (0..9).map(|i| i * 3).collect();
    for len in 0..p.len() {
        for n in 0..=6 {
            let old: Vec<usize> = p[..len].iter().rev().take(n).copied().collect();
            assert_eq!(&*newest(&p[..len], n), &old[..]);
        }
    }
}
