//! Roo Code's own ToolRepetitionDetector.spec.ts cases (@cb83656718), ported
//! to the port's detector: same calls, same allowed/blocked results.

use crate::detect::peers::roo::RooDetector;
use serde_json::{json, Value};
use std::collections::BTreeMap;

fn params(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
    kv.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Feed `n` identical calls and return which were allowed.
fn repeat(d: &mut RooDetector, name: &str, p: &BTreeMap<String, String>, n: usize) -> Vec<bool> {
    (0..n).map(|_| d.check_block(name, p, None)).collect()
}

fn read(path: &str) -> BTreeMap<String, String> {
    params(&[("path", path)])
}

#[test]
fn default_limit_3_blocks_the_fourth() {
    let mut d = RooDetector::new(3);
    assert_eq!(
        repeat(&mut d, "read_file", &read("a.txt"), 4),
        [true, true, true, false]
    );
}

#[test]
fn custom_limit_2_blocks_the_third() {
    let mut d = RooDetector::new(2);
    assert_eq!(
        repeat(&mut d, "read_file", &read("a.txt"), 3),
        [true, true, false]
    );
}

#[test]
fn different_tools_are_all_allowed() {
    let mut d = RooDetector::new(3);
    assert!(d.check_block("first", &params(&[]), None));
    assert!(d.check_block("second", &params(&[]), None));
    assert!(d.check_block("third", &params(&[]), None));
}

#[test]
fn a_different_call_resets_the_count() {
    let mut d = RooDetector::new(2);
    assert!(d.check_block("read_file", &read("a"), None));
    assert!(d.check_block("write_file", &read("a"), None));
    assert!(d.check_block("read_file", &read("a"), None));
}

#[test]
fn after_a_block_a_new_tool_is_allowed() {
    let mut d = RooDetector::new(2);
    assert_eq!(
        repeat(&mut d, "read_file", &read("a"), 3),
        [true, true, false]
    );
    assert!(d.check_block("write_file", &read("a"), None));
}

#[test]
fn after_a_block_the_same_tool_is_allowed_again() {
    let mut d = RooDetector::new(2);
    assert_eq!(
        repeat(&mut d, "read_file", &read("a"), 3),
        [true, true, false]
    );
    assert!(d.check_block("read_file", &read("a"), None));
}

#[test]
fn after_a_block_counting_restarts() {
    let mut d = RooDetector::new(2);
    assert_eq!(
        repeat(&mut d, "read_file", &read("a"), 6),
        [true, true, false, true, true, false]
    );
}

#[test]
fn empty_params_repeat() {
    let mut d = RooDetector::new(2);
    assert_eq!(repeat(&mut d, "list", &params(&[]), 3), [true, true, false]);
}

#[test]
fn parameter_order_does_not_matter() {
    let mut d = RooDetector::new(2);
    // The original builds the same params in three key orders; stable
    // stringify sorts them, so they are one call.
    let p = params(&[("a", "1"), ("b", "2"), ("c", "3")]);
    assert_eq!(repeat(&mut d, "t", &p, 3), [true, true, false]);
    let mut d = RooDetector::new(2);
    let calls = [
        serde_json::from_str(r#"{"a":"1","b":"2","c":"3"}"#).unwrap(),
        serde_json::from_str(r#"{"c":"3","a":"1","b":"2"}"#).unwrap(),
        serde_json::from_str::<serde_json::Map<String, Value>>(r#"{"b":"2","c":"3","a":"1"}"#)
            .unwrap(),
    ];
    let got: Vec<bool> = calls.iter().map(|a| d.check_call("t", a)).collect();
    assert_eq!(got, [true, true, false]);
}

#[test]
fn limits_1_2_3_5() {
    for (limit, n) in [(1, 2), (2, 3), (3, 4), (5, 6)] {
        let mut d = RooDetector::new(limit);
        let got = repeat(&mut d, "t", &read("x"), n);
        let mut want = vec![true; n - 1];
        want.push(false);
        assert_eq!(got, want, "limit {limit}");
    }
}

#[test]
fn limit_0_and_negative_never_block() {
    let mut d = RooDetector::new(0);
    assert!(repeat(&mut d, "t", &read("x"), 10).iter().all(|b| *b));
    let mut d = RooDetector::new(-1);
    assert!(repeat(&mut d, "t", &read("x"), 5).iter().all(|b| *b));
}

#[test]
fn after_a_block_the_next_call_is_allowed() {
    let mut d = RooDetector::new(2);
    repeat(&mut d, "t", &read("x"), 3);
    assert!(d.check_block("t", &read("x"), None));
}

#[test]
fn native_args_distinguish_calls() {
    let p = read("");
    let f1 = json!({"files": [{"path": "file1"}]});
    let f2 = json!({"files": [{"path": "file2"}]});
    let mut d = RooDetector::new(2);
    assert!(d.check_block("read_file", &p, Some(&f1)));
    assert!(d.check_block("read_file", &p, Some(&f2)));
    assert!(d.check_block("read_file", &p, Some(&f1)));
    // The same nativeArgs three times: the third is blocked.
    let mut d = RooDetector::new(2);
    let got: Vec<bool> = (0..3)
        .map(|_| d.check_block("read_file", &p, Some(&f1)))
        .collect();
    assert_eq!(got, [true, true, false]);
    // Same path, offsets 1 and 2001.
    let mut d = RooDetector::new(2);
    assert!(d.check_block(
        "read_file",
        &read("a"),
        Some(&json!({"path": "a", "offset": 1}))
    ));
    assert!(d.check_block(
        "read_file",
        &read("a"),
        Some(&json!({"path": "a", "offset": 2001}))
    ));
    // Same params, nativeArgs cwd differs.
    let mut d = RooDetector::new(1);
    assert!(d.check_block(
        "run",
        &params(&[("command", "ls")]),
        Some(&json!({"command": "ls", "cwd": "/a"}))
    ));
    assert!(d.check_block(
        "run",
        &params(&[("command", "ls")]),
        Some(&json!({"command": "ls", "cwd": "/b"}))
    ));
}

#[test]
fn params_without_native_args_repeat() {
    let mut d = RooDetector::new(2);
    assert_eq!(
        repeat(&mut d, "read_file", &read("test.txt"), 3),
        [true, true, false]
    );
}

#[test]
fn canonical_calls_string_vs_number_differ_but_numbers_by_value() {
    // params alone would make "1" and 1 equal; nativeArgs keeps them apart.
    let a: serde_json::Map<String, Value> = serde_json::from_str(r#"{"n":"1"}"#).unwrap();
    let b: serde_json::Map<String, Value> = serde_json::from_str(r#"{"n":1}"#).unwrap();
    let c: serde_json::Map<String, Value> = serde_json::from_str(r#"{"n":1.0}"#).unwrap();
    let mut d = RooDetector::new(1);
    assert!(d.check_call("t", &a));
    assert!(d.check_call("t", &b));
    assert!(!d.check_call("t", &c));
}

proptest::proptest! {
    /// A call's signature written directly is the one built as the original
    /// builds it (params by key, the arguments as `nativeArgs`, every key
    /// sorted by UTF-16 units), for any keys, values and tool names.
    #[test]
    fn a_call_signature_is_the_built_one(
        name in "[a-z\"\u{e9}\u{ff61}\u{1f600}]{0,4}",
        kv in proptest::collection::vec((0usize..6, 0usize..7), 0..5),
    ) {
        use crate::detect::peers::roo::{call_signature, serialize};
        let keys = ["path", "a", "\u{ff61}", "\u{1f600}", "Z\n", "10"];
        let values = [
            json!("x\"y"), json!(1), json!(2.5), json!(null), json!(true),
            json!({"b": [1, "c"], "a": {}}), json!([]),
        ];
        let args: serde_json::Map<String, Value> =
            kv.iter().map(|(k, v)| (keys[*k].to_string(), values[*v].clone())).collect();
        let params: BTreeMap<String, String> = args
            .iter()
            .map(|(k, v)| {
                let s = match v {
                    Value::String(s) => s.clone(),
                    other => crate::util::js::stringify(other),
                };
                (k.clone(), s)
            })
            .collect();
        proptest::prop_assert_eq!(
            call_signature(&name, &args),
            serialize(&name, &params, Some(&Value::Object(args.clone())))
        );
    }
}
