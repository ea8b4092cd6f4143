//! The cases of Gemini CLI's own `loopDetectionService.test.ts` (HEAD
//! 5411f113ca) that replay can express, with the same inputs and expected
//! results, plus the cases that changed between versions and the quirks the
//! port must keep. Numbers (#n) refer to the test list in the research notes.
//! Not expressible in replay: disabling for the session or by setting (#6-8,
//! #51) and a double-check model that is unavailable (#55).

use looptune::detect::{DetectorConfig, ParamValue, Prepared};
use looptune::event::{Origin, Record, Session};
use looptune::replay::outcome;
use serde_json::{json, Value};
use std::sync::Arc;

/// A session built record by record; event numbers are positions (1-based).
#[derive(Default)]
struct B(Vec<Record>);

impl B {
    fn tool(mut self, name: &str, args: Value) -> B {
        let Value::Object(args) = args else {
            panic!("args must be an object")
        };
        self.0.push(Record::ToolCall {
            name: name.into(),
            args: args.into(),
            id: None,
        });
        self
    }
    fn t(self) -> B {
        self.tool("testTool", json!({"param": "value"}))
    }
    fn ts(mut self, n: usize) -> B {
        for _ in 0..n {
            self = self.t();
        }
        self
    }
    fn c(mut self, text: &str) -> B {
        self.0.push(Record::Content { text: text.into() });
        self
    }
    fn cs(mut self, text: &str, n: usize) -> B {
        for _ in 0..n {
            self = self.c(text);
        }
        self
    }
    fn thought(mut self) -> B {
        self.0.push(Record::Thought { text: "hmm".into() });
        self
    }
    fn user(mut self) -> B {
        self.0.push(Record::User {
            text: "go".into(),
            prompt_id: None,
        });
        self
    }
    fn model(mut self, m: &str) -> B {
        self.0.push(Record::Session {
            agent: None,
            model: Some(m.into()),
            mode: None,
            meta: None,
        });
        self
    }
    /// `n` explicit turns; `judge(turn)` gives the judge records of that prompt turn.
    fn turns(mut self, n: u32, judge: impl Fn(u32) -> Vec<f64>) -> B {
        for t in 1..=n {
            self.0.push(Record::Turn);
            for c in judge(t) {
                self.0.push(Record::Judge {
                    confidence: c,
                    model: None,
                    analysis: None,
                });
            }
        }
        self
    }
    fn session(self) -> Session {
        let recs = self.0.into_iter().map(|r| (r, Origin::default())).collect();
        Session::from_records("s".into(), recs)
    }
}

/// Every detection (clearDetection() after each) as (kind, event, strike).
fn all(profile: &str, sets: &[(&str, ParamValue)], b: B) -> Vec<(&'static str, u32, u32)> {
    let sets: Vec<(String, ParamValue)> = sets
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    let cfg = DetectorConfig::resolve(None, Some(profile), &sets).unwrap();
    let p = Prepared::new(Arc::new(b.session()));
    let checks = cfg.checks().unwrap();
    looptune::detect::run_checks(&checks, &p, None)
        .into_iter()
        .map(|d| (d.kind, d.event, d.strike))
        .collect()
}

/// The first detection's event.
fn first(profile: &str, b: B) -> Option<u32> {
    all(profile, &[], b).first().map(|d| d.1)
}

/// Judge checks due as turn numbers, when nobody acts on detections.
fn judge_due_turns(profile: &str, b: B) -> Vec<u32> {
    let cfg = DetectorConfig::resolve(None, Some(profile), &[]).unwrap();
    let s = Arc::new(b.session());
    let p = Prepared::new(s.clone());
    cfg.checks()
        .unwrap()
        .iter()
        .filter_map(|c| c.judge_due(&p))
        .flatten()
        .map(|(ev, _)| s.events[ev as usize - 1].turn)
        .collect()
}

const L: &str = "gemini-latest";

fn rep(id: u32, n: usize) -> String {
    let unit = format!("This is a unique sentence, id={id}. ");
    unit.repeat(n / unit.len() + 1).chars().take(n).collect()
}

/// Deterministic alphanumerics (the original uses Math.random).
fn random(seed: &mut u64, n: usize) -> String {
    const A: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    (0..n)
        .map(|_| {
            *seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            A[(*seed >> 33) as usize % A.len()] as char
        })
        .collect()
}

// ---- Tool Call Loop Detection ----

#[test]
fn t01_fewer_than_threshold_identical_calls() {
    assert_eq!(first(L, B::default().ts(4)), None);
}

#[test]
fn t02_loop_on_the_threshold_call() {
    assert_eq!(first(L, B::default().ts(5)), Some(5));
}

#[test]
fn t03_sticky_then_each_later_identical_call_is_a_new_strike() {
    assert_eq!(
        all(L, &[], B::default().ts(7)),
        vec![
            ("tool_call", 5, 1),
            ("tool_call", 6, 2),
            ("tool_call", 7, 3)
        ]
    );
}

#[test]
fn t04_different_tool_calls() {
    let mut b = B::default();
    for _ in 0..3 {
        b = b
            .tool("testTool", json!({"param": "value1"}))
            .tool("testTool", json!({"param": "value2"}))
            .tool("anotherTool", json!({"param": "value1"}));
    }
    assert_eq!(first(L, b), None);
}

#[test]
fn t05_other_events_do_not_reset_the_counter() {
    assert_eq!(first(L, B::default().ts(4).thought().t()), Some(6));
}

fn files(b: B, names: &[&str], n: usize) -> B {
    let mut b = b;
    for i in 0..n {
        b = b.tool("read_file", json!({"file_path": names[i % names.len()]}));
    }
    b
}

#[test]
fn t09_alternating_cycle_of_two() {
    assert_eq!(
        first(L, files(B::default(), &["loop_a.txt", "loop_b.txt"], 15)),
        Some(10)
    );
}

#[test]
fn t10_cycle_of_three() {
    assert_eq!(
        first(
            L,
            files(
                B::default(),
                &["loop_a.txt", "loop_b.txt", "loop_c.txt"],
                20
            )
        ),
        Some(15)
    );
}

#[test]
fn t11_cycle_of_five() {
    let mut b = B::default();
    for i in 0..30 {
        b = b.tool("t", json!({"id": i % 5 + 1}));
    }
    assert_eq!(first(L, b), Some(25));
}

#[test]
fn t12_varying_alternation_is_no_loop() {
    let b = files(B::default(), &["loop_a.txt", "loop_b.txt"], 4);
    let b = b.tool("read_file", json!({"file_path": "loop_c.txt"}));
    let b = files(b, &["loop_a.txt", "loop_b.txt"], 4);
    assert_eq!(first(L, b), None);
}

#[test]
fn cycles_are_not_detected_before_2026_07() {
    assert_eq!(
        first("gemini-2026-03", files(B::default(), &["a", "b"], 30)),
        None
    );
    // a 6-cycle is never detected, even at HEAD
    let mut b = B::default();
    for i in 0..60 {
        b = b.tool("t", json!({"id": i % 6}));
    }
    assert_eq!(first(L, b), None);
}

// ---- Content Loop Detection ----

#[test]
fn t13_random_content() {
    let mut seed = 7;
    let mut b = B::default();
    for _ in 0..1000 {
        b = b.c(&random(&mut seed, 10));
    }
    assert_eq!(first(L, b), None);
}

#[test]
fn t14_chunk_repeating_consecutively() {
    assert_eq!(first(L, B::default().cs(&rep(1, 50), 10)), Some(10));
}

#[test]
fn t15_list_with_long_shared_prefix() {
    let text: String = (0..15)
        .map(|i| {
            format!("- projects/my-google-cloud-project-12345/locations/us-central1/services/{i}\n")
        })
        .collect();
    assert_eq!(first(L, B::default().c(&text)), None);
    // Before the period rule (2026-02-13) this fired at once.
    assert_eq!(first("gemini-2025-11", B::default().c(&text)), Some(1));
}

#[test]
fn t16_repetitions_far_apart() {
    let mut seed = 11;
    let mut b = B::default();
    for _ in 0..10 {
        b = b.c(&rep(1, 50)).c(&random(&mut seed, 500));
    }
    assert_eq!(first(L, b), None);
}

#[test]
fn t17_longer_repeating_pattern() {
    assert_eq!(first(L, B::default().cs(&rep(1, 150), 12)), Some(3));
}

const EXAMPLE_1: &str = "I will not output any text.\n  I will just end the turn.\n  I am done.\n  I will not do anything else.\n  I will wait for the user's next command.\n";
const EXAMPLE_2: &str = "I have added all the requested logs and verified the test file. I will now mark the task as complete.\n  ";

#[test]
fn t18_user_provided_loop_example() {
    assert_eq!(EXAMPLE_1.len(), 143);
    assert_eq!(first(L, B::default().cs(EXAMPLE_1, 15)), Some(10));
    assert_eq!(
        first("gemini-2025-08", B::default().cs(EXAMPLE_1, 15)),
        None
    );
}

#[test]
fn t19_second_user_provided_loop_example() {
    assert_eq!(EXAMPLE_2.len(), 104);
    assert_eq!(first(L, B::default().cs(EXAMPLE_2, 15)), Some(10));
    assert_eq!(
        first("gemini-2025-08", B::default().cs(EXAMPLE_2, 15)),
        None
    );
}

#[test]
fn t20_alternating_short_phrases() {
    assert_eq!(
        first(L, B::default().cs("Thinking... Done. ", 30)),
        Some(12)
    );
}

#[test]
fn t21_repeated_complex_thought_process() {
    let s = "I need to check the file. The file does not exist. I will create the file. ";
    assert_eq!(s.len(), 75);
    assert_eq!(first(L, B::default().cs(s, 15)), Some(10));
}

// ---- Content Loop Detection with Code Blocks ----

fn r() -> String {
    rep(1, 50)
}

#[test]
fn t22_repetition_inside_a_code_block() {
    assert_eq!(
        first(L, B::default().c("```\n").cs(&r(), 10).c("\n```")),
        None
    );
}

#[test]
fn t23_transition_into_a_code_block() {
    assert_eq!(
        first(
            L,
            B::default().cs(&r(), 8).c("```javascript\n").cs(&r(), 10)
        ),
        None
    );
}

#[test]
fn t24_already_inside_a_code_block() {
    assert_eq!(
        first(L, B::default().c("Here is some code:\n```\n").cs(&r(), 15)),
        None
    );
}

#[test]
fn t25_multiple_fence_transitions() {
    let b = B::default()
        .c("Normal text ")
        .c("```\n")
        .cs(&r(), 5)
        .c("```\n")
        .c("```python\n");
    assert_eq!(first(L, b), None);
}

#[test]
fn t26_repetition_outside_a_code_block() {
    assert_eq!(
        first(
            L,
            B::default()
                .c("```")
                .c("\nsome code\n")
                .c("```")
                .cs(&r(), 10)
        ),
        Some(13)
    );
}

#[test]
fn t27_multiple_code_blocks_no_loop() {
    let b = B::default()
        .c("```\ncode1\n```")
        .c("\nsome text\n")
        .c("```\ncode2\n```");
    assert_eq!(first(L, b), None);
}

#[test]
fn t28_mixed_code_blocks_and_looping_text() {
    assert_eq!(
        first(
            L,
            B::default().c("```").c("\ncode1\n").c("```").cs(&r(), 10)
        ),
        Some(13)
    );
}

#[test]
fn t29_long_code_block_with_repeating_tokens() {
    let b = B::default()
        .c("```\n")
        .cs("for (let i = 0; i < 10; i++) { console.log(i); }", 20)
        .c("\n```");
    assert_eq!(first(L, b), None);
}

#[test]
fn t30_fence_resets_tracking() {
    assert_eq!(
        first(L, B::default().cs(&r(), 9).c("```").cs(&r(), 10)),
        None
    );
}

#[test]
fn t31_to_34_markdown_elements_reset_tracking() {
    for el in [
        "| Column 1 | Column 2 |",
        "* List item",
        "## Heading",
        "> Quote text",
    ] {
        assert_eq!(
            first(L, B::default().cs(&r(), 9).c(el).cs(&r(), 9)),
            None,
            "{el}"
        );
    }
    // Without the reset (July 2025) the table case fires on the 11th chunk.
    let b = B::default()
        .cs(&r(), 9)
        .c("| Column 1 | Column 2 |")
        .cs(&r(), 9);
    assert_eq!(first("gemini-2025-07", b), Some(11));
}

#[test]
fn t35_to_37_formats_do_not_loop() {
    let items = [
        "* Bullet item",
        "- Dash item",
        "+ Plus item",
        "1. Numbered item",
        "42. Another numbered item",
        "| Column 1 | Column 2 |",
        "|---|---|",
        "|++|++|",
        "+---+---+",
        "# H1 Heading",
        "###### H6 Heading",
    ];
    for (i, f) in items.iter().enumerate() {
        let b = B::default()
            .cs(&r(), 9)
            .c(&format!("\n{f}"))
            .cs(&rep(100 + i as u32, 50), 9);
        assert_eq!(first(L, b), None, "{f}");
    }
}

#[test]
fn dash_bullet_does_not_reset_the_list_flag_quirk() {
    // `[*-+]` is a range from * to +: a "- " bullet is no markdown element,
    // so the repetition continues across it (the original's weak test hides this).
    let b = B::default().cs(&r(), 9).c("\n- Dash item").c(&r());
    assert!(first(L, b).is_some());
    let b = B::default().cs(&r(), 9).c("\n* Star item").c(&r());
    assert_eq!(first(L, b), None);
}

// ---- Edge cases, dividers, strikes, reset, general ----

#[test]
fn t38_empty_content() {
    assert_eq!(first(L, B::default().c("")), None);
}

#[test]
fn t39_divider_like_content() {
    let div = "-".repeat(50);
    assert_eq!(first(L, B::default().cs(&div, 15)), None);
    assert_eq!(first("gemini-2025-07", B::default().cs(&div, 15)), Some(2));
}

#[test]
fn t40_box_drawing_dividers() {
    let div = "╭─".repeat(25);
    assert_eq!(first(L, B::default().cs(&div, 15)), None);
    assert_eq!(first("gemini-2025-07", B::default().cs(&div, 15)), Some(2));
}

#[test]
fn divider_class_includes_uppercase_quirk() {
    // "ABCDEFGHIJ" x100 is a divider from 2025-08-23: never a loop; lowercase loops at event 14.
    let up = "ABCDEFGHIJ".repeat(100);
    assert_eq!(first(L, B::default().cs(&up, 20)), None);
    let low = "abcdefghij".repeat(100);
    let b = (0..20).fold(B::default(), |b, _| b.c(&low[..50]));
    assert!(first(L, b).is_some());
}

#[test]
fn t41_strike_count_increments() {
    let d = all(L, &[], B::default().ts(6));
    assert_eq!(d.iter().map(|x| x.2).collect::<Vec<_>>(), vec![1, 2]);
}

#[test]
fn t42_recovery_text_after_a_tool_loop_is_no_loop() {
    let d = all(L, &[], B::default().ts(5).c("Recovery text"));
    assert_eq!(d, vec![("tool_call", 5, 1)]);
}

#[test]
fn t43_tool_call_resets_content() {
    let b = B::default().cs("Some content.", 9).t().c("Fresh content.");
    assert_eq!(first(L, b), None);
}

#[test]
fn content_loop_refires_after_clear_detection() {
    // The window index does not advance on a loop: the next plain chunk fires again.
    let d = all(L, &[], B::default().cs(&r(), 10).c("Recovery text"));
    assert_eq!(d, vec![("content", 10, 1), ("content", 11, 2)]);
}

#[test]
fn t44_unhandled_event_types() {
    let b = B::default().thought().thought();
    assert_eq!(first(L, b), None);
}

#[test]
fn new_prompt_resets_everything_but_code_block_state() {
    assert_eq!(first(L, B::default().ts(4).user().ts(4)), None);
    // An unclosed fence in one prompt still suppresses content in the next.
    let b = B::default().c("```\n").user().cs(&r(), 12);
    assert_eq!(first(L, b), None);
    let b = B::default().c("```\n").user().cs(&r(), 12);
    assert_eq!(first("gemini-2025-07", b), Some(12));
}

// ---- LLM checks ----

#[test]
fn t45_no_check_before_turn_30() {
    assert!(judge_due_turns(L, B::default().turns(29, |_| vec![1.0])).is_empty());
}

#[test]
fn t46_check_on_turn_30() {
    assert_eq!(
        judge_due_turns(L, B::default().turns(30, |_| vec![0.1])),
        vec![30]
    );
    assert_eq!(first(L, B::default().turns(30, |_| vec![0.1])), None);
}

#[test]
fn t47_high_confidence_is_a_loop() {
    let b = || B::default().turns(37, |t| vec![if t < 37 { 0.85 } else { 0.95 }]);
    assert_eq!(judge_due_turns(L, b()), vec![30, 37]);
    let d = all(L, &[], b());
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].0, "llm");
}

#[test]
fn t48_low_confidence_is_no_loop() {
    assert_eq!(first(L, B::default().turns(31, |_| vec![0.5])), None);
}

#[test]
fn t49_interval_follows_confidence() {
    assert_eq!(
        judge_due_turns(L, B::default().turns(45, |_| vec![0.0])),
        vec![30, 45]
    );
    assert_eq!(
        judge_due_turns(L, B::default().turns(50, |_| vec![0.5])),
        vec![30, 40, 50]
    );
    // 2025 builds: default interval 3
    assert_eq!(
        judge_due_turns("gemini-2025-08", B::default().turns(44, |_| vec![0.85])),
        vec![30, 37, 44]
    );
}

#[test]
fn t50_missing_verdict_keeps_the_interval() {
    assert_eq!(
        judge_due_turns(L, B::default().turns(50, |_| vec![])),
        vec![30, 40, 50]
    );
    assert_eq!(
        judge_due_turns("gemini-2025-08", B::default().turns(36, |_| vec![])),
        vec![30, 33, 36]
    );
    assert_eq!(first(L, B::default().turns(50, |_| vec![])), None);
}

#[test]
fn t53_exactly_the_threshold() {
    let b = || B::default().turns(30, |_| vec![0.9]);
    assert!(first(L, b()).is_some());
    // single-stage 2025 builds need > 0.9
    assert_eq!(first("gemini-2025-08", b()), None);
}

#[test]
fn t54_flash_confident_main_not() {
    let b = || B::default().turns(36, |t| if t == 30 { vec![0.9, 0.89] } else { vec![0.0] });
    assert_eq!(first(L, b()), None);
    assert_eq!(judge_due_turns(L, b()), vec![30, 36]);
}

#[test]
fn judge_counts_turns_per_prompt() {
    let b = B::default()
        .turns(20, |_| vec![1.0])
        .user()
        .turns(20, |_| vec![1.0]);
    assert_eq!(first(L, b), None);
}

// ---- Version-specific and quirk cases ----

#[test]
fn july_2025_char_by_char_fires_at_event_59() {
    let b = B::default().cs("a", 500);
    assert_eq!(first("gemini-2025-07", b), Some(59));
}

#[test]
fn emoji_windows_split_surrogate_pairs() {
    // 25 emoji are 50 UTF-16 units; windows at even offsets repeat.
    assert_eq!(first(L, B::default().cs(&"😀".repeat(25), 3)), Some(2));
}

#[test]
fn key_order_matters_and_number_spelling_does_not() {
    let mut b = B::default();
    for i in 0..10 {
        b = if i % 2 == 0 {
            b.tool("t", json!({"a": 1, "b": 2}))
        } else {
            b.tool("t", json!({"b": 2, "a": 1}))
        };
    }
    assert_eq!(first("gemini-2026-03", b), None);
    let one: Value = serde_json::from_str(r#"{"n": 1.0}"#).unwrap();
    let b = B::default()
        .tool("t", json!({"n": 1}))
        .tool("t", one.clone())
        .tool("t", one.clone())
        .tool("t", one.clone())
        .tool("t", one);
    assert_eq!(first(L, b), Some(5));
}

#[test]
fn tool_name_is_trimmed_only_from_2026_05() {
    let b = || {
        B::default()
            .tool("t", json!({}))
            .tool(" t", json!({}))
            .tool("t ", json!({}))
            .tool("t", json!({}))
            .tool("\tt", json!({}))
    };
    assert_eq!(first(L, b()), Some(5));
    assert_eq!(first("gemini-2026-03", b()), None);
}

#[test]
fn judge_fires_before_a_tool_loop_on_the_same_record() {
    // With implicit turns one tool_call can start turn 30 and be the fifth
    // identical call; turnStarted() runs before addAndCheck() (found by the
    // differential check against the original).
    let mut b = B::default();
    for _ in 0..4 {
        b = b.tool("t", json!({}));
        b.0.push(Record::ToolResult {
            id: None,
            name: None,
            output: None,
            error: None,
        });
    }
    for _ in 0..25 {
        b = b.c("x");
        b.0.push(Record::ToolResult {
            id: None,
            name: None,
            output: None,
            error: None,
        });
    }
    let b = b.tool("t", json!({}));
    let mut b = b;
    b.0.push(Record::Judge {
        confidence: 0.95,
        model: None,
        analysis: None,
    });
    assert_eq!(all(L, &[], b), vec![("llm", 59, 1), ("tool_call", 59, 2)]);
}

#[test]
fn empty_tool_name_is_undefined_tool_name_before_2026_05() {
    let b = || {
        B::default()
            .tool("", json!({}))
            .tool("", json!({}))
            .tool("", json!({}))
            .tool("undefined_tool_name", json!({}))
            .tool("undefined_tool_name", json!({}))
    };
    assert_eq!(first("gemini-2026-03", b()), Some(5));
    assert_eq!(first("gemini-2025-07", b()), Some(5));
    // HEAD maps an empty name to generic_tool instead.
    assert_eq!(first(L, b()), None);
}

// ---- DeepV fork ----

#[test]
fn deepv_preview_counts_tool_names_per_prompt() {
    let b = |model: &str| {
        let mut b = B::default().model(model).user();
        for i in 0..4 {
            b = b
                .tool("read_file", json!({"path": format!("/f{i}")}))
                .tool("edit", json!({"i": i}));
        }
        b
    };
    let d = all("deepv-preview", &[], b("gemini-3-pro-preview"));
    assert_eq!(d[0], ("tool_name", 9, 1));
    assert_eq!(first("deepv-preview", b("gemini-2.5-pro")), None);
    // preview_strict applies the rule whatever the model
    let d = all(
        "deepv-preview",
        &[("preview_strict", ParamValue::Bool(true))],
        b("gemini-2.5-pro"),
    );
    assert_eq!(d[0].1, 9);
}

#[test]
fn deepv_exact_rule_fires_at_ten_without_touching_name_counts() {
    assert_eq!(first("deepv-preview", B::default().ts(9)), None);
    assert_eq!(first("deepv-preview", B::default().ts(10)), Some(10));
}

#[test]
fn deepv_latest_counts_consecutive_monitored_calls() {
    let mut b = B::default().model("x-preview");
    for i in 0..31 {
        b = b.tool("read_file", json!({"p": i}));
    }
    let b = b.tool("run_shell_command", json!({})); // not monitored: clears the run
    let mut b2 = b;
    for i in 0..32 {
        b2 = b2.tool("read_file", json!({"p": i}));
    }
    assert_eq!(all("deepv-latest", &[], b2)[0].1, 1 + 31 + 1 + 32);
}

#[test]
fn deepv_content_ignores_insignificant_windows() {
    let sep = "-".repeat(500);
    assert_eq!(first("deepv-preview", B::default().cs(&sep, 30)), None);
    let text = rep(3, 500);
    assert!(first("deepv-preview", B::default().cs(&text, 30)).is_some());
}

#[test]
fn policy_decides_the_stop() {
    let cfg = DetectorConfig::resolve(None, Some(L), &[]).unwrap();
    let s = Arc::new(B::default().ts(7).session());
    let p = Prepared::new(s.clone());
    let dets = looptune::detect::run_checks(&cfg.checks().unwrap(), &p, None);
    let o = outcome(&s, &[&dets[..]], &[], cfg.policy(), false);
    // gemini-latest warns once (strike 1) and stops on strike 2
    assert_eq!(o.stop.unwrap().event, 6);
    assert_eq!(o.warnings, 1);
}
