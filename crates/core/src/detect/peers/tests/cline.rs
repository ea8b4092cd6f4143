//! Cline's loop-detection.test.ts (extension, PR #9933 @f3a3f30db5) and the SDK
//! orchestrator's loop cases (@21cb8d2525), ported to the port's tracker.

use super::obj;
use crate::detect::peers::cline::{ClineSettings, ClineTracker, Verdict};
use serde_json::{json, Value};

fn extension() -> ClineTracker {
    ClineTracker::new(ClineSettings {
        soft: 3,
        hard: 5,
        ignored: vec!["task_progress".into()],
        rearm: true,
        hard_exact: false,
    })
}

fn verdicts(t: &mut ClineTracker, calls: &[(&str, Value)]) -> Vec<Verdict> {
    calls
        .iter()
        .map(|(n, a)| t.inspect(n, &obj(a.clone())).0)
        .collect()
}

#[test]
fn signature_ignores_key_order() {
    let t = extension();
    assert_eq!(
        t.signature(&obj(json!({"path": "a", "recursive": "true"}))),
        t.signature(&obj(json!({"recursive": "true", "path": "a"})))
    );
}

#[test]
fn five_identical_calls_soft_at_third_hard_at_fifth() {
    let mut t = extension();
    let call = ("read_file", json!({"path": "src/main.ts"}));
    let v = verdicts(&mut t, &vec![call; 5]);
    use Verdict::*;
    assert_eq!(v, [Ok, Ok, Soft, Ok, Hard]);
}

#[test]
fn reset_when_params_or_tool_change() {
    let mut t = extension();
    t.inspect("read_file", &obj(json!({"path": "a"})));
    t.inspect("read_file", &obj(json!({"path": "a"})));
    assert_eq!(t.count_at_call(), 2);
    t.inspect("read_file", &obj(json!({"path": "b"})));
    assert_eq!(t.count_at_call(), 1);
    t.inspect("list_files", &obj(json!({"path": "b"})));
    assert_eq!(t.count_at_call(), 1);
}

#[test]
fn different_tools_with_same_params_never_accumulate() {
    let mut t = extension();
    let calls: Vec<(&str, Value)> = (0..6)
        .map(|i| {
            (
                if i % 2 == 0 {
                    "read_file"
                } else {
                    "search_files"
                },
                json!({"path": "a"}),
            )
        })
        .collect();
    assert!(verdicts(&mut t, &calls).iter().all(|v| *v == Verdict::Ok));
}

#[test]
fn rearms_after_the_hard_stop() {
    let mut t = extension();
    let call = ("read_file", json!({"path": "src/main.ts"}));
    use Verdict::*;
    assert_eq!(
        verdicts(&mut t, &vec![call.clone(); 5]),
        [Ok, Ok, Soft, Ok, Hard]
    );
    assert_eq!(verdicts(&mut t, &vec![call; 5]), [Ok, Ok, Soft, Ok, Hard]);
}

#[test]
fn tool_change_after_reset_gives_no_warning() {
    let mut t = extension();
    verdicts(&mut t, &vec![("read_file", json!({"path": "a"})); 5]);
    let v = verdicts(
        &mut t,
        &[
            ("write_to_file", json!({"path": "a"})),
            ("read_file", json!({"path": "a"})),
        ],
    );
    assert_eq!(v, [Verdict::Ok, Verdict::Ok]);
}

#[test]
fn task_progress_is_ignored() {
    let mut t = extension();
    let calls: Vec<(&str, Value)> = (0..5)
        .map(|i| {
            (
                "read_file",
                json!({"path": "a", "task_progress": format!("- [x] step {i}")}),
            )
        })
        .collect();
    use Verdict::*;
    assert_eq!(verdicts(&mut t, &calls), [Ok, Ok, Soft, Ok, Hard]);
}

#[test]
fn sdk_soft_2_hard_3_aborts_on_the_third() {
    let mut t = ClineTracker::new(ClineSettings {
        soft: 2,
        hard: 3,
        ignored: vec![],
        rearm: false,
        hard_exact: false,
    });
    let v = verdicts(&mut t, &vec![("tool", json!({"a": 1})); 3]);
    assert_eq!(v, [Verdict::Ok, Verdict::Soft, Verdict::Hard]);
}

#[test]
fn sdk_hard_repeats_from_the_fifth_on() {
    let mut t = ClineTracker::new(ClineSettings {
        soft: 3,
        hard: 5,
        ignored: vec![],
        rearm: false,
        hard_exact: false,
    });
    let v = verdicts(&mut t, &vec![("t", json!({"x": {"b": 1, "a": 2}})); 7]);
    use Verdict::*;
    assert_eq!(v, [Ok, Ok, Soft, Ok, Hard, Hard, Hard]);
    // Nested key order is ignored; "1" and 1 differ.
    let mut t = ClineTracker::new(ClineSettings {
        soft: 3,
        hard: 5,
        ignored: vec![],
        rearm: false,
        hard_exact: false,
    });
    t.inspect("t", &obj(json!({"n": "1"})));
    t.inspect("t", &obj(json!({"n": 1})));
    assert_eq!(t.count_at_call(), 1);
}
