//! `looptune export`: the TOML `--for looptune` writes, loaded by `replay
//! --config`, detects exactly what its configuration did in the sweep; agents'
//! fragments and diffs, and what they cannot express.

use crate::util::*;
use std::collections::BTreeSet;

const GRID: &str = r#"
name = "roundtrip"
stock_profiles = false
[[grid]]
profile = "gemini-latest"
[grid.axes]
tool_call_threshold = [2, 3]
content_max_distance_factor = [0.75, 5]
[[grid]]
profile = "looptune-default"
[grid.axes]
repeat_stop = [2, 4]
[[grid]]
profile = "opencode"
[grid.axes]
threshold = [2, 3]
[[grid]]
profile = "openhands-v1"
[grid.axes]
policy = ["stop", "warn:2"]
"#;

/// (session, event, kind) of every first detection in detections.csv, by configuration.
fn swept(
    dir: &std::path::Path,
) -> std::collections::BTreeMap<String, BTreeSet<(String, u64, String)>> {
    let mut r = csv::Reader::from_path(dir.join("detections.csv")).unwrap();
    let h = r.headers().unwrap().clone();
    let col = |n: &str| h.iter().position(|x| x == n).unwrap();
    let (c, s, e, k) = (col("config"), col("session"), col("event"), col("kind"));
    let mut out = std::collections::BTreeMap::<String, BTreeSet<_>>::new();
    for row in r.records() {
        let row = row.unwrap();
        out.entry(row[c].to_string()).or_default().insert((
            row[s].to_string(),
            row[e].parse().unwrap(),
            row[k].to_string(),
        ));
    }
    out
}

fn config_ids(dir: &std::path::Path) -> Vec<String> {
    let mut r = csv::Reader::from_path(dir.join("sweep.csv")).unwrap();
    r.records().map(|x| x.unwrap()[0].to_string()).collect()
}

#[test]
fn the_exported_toml_replays_what_the_sweep_found() {
    let tmp = tempfile::tempdir().unwrap();
    let grid = write(tmp.path(), "grid.toml", GRID);
    let out = tmp.path().join("sweep");
    let fixtures = root().join("fixtures/sessions");
    let r = run(&[
        "sweep",
        fixtures.to_str().unwrap(),
        "--grid",
        grid.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "-q",
    ]);
    assert_ok(&r);
    let found = swept(&out);
    let ids = config_ids(&out);
    assert_eq!(ids.len(), 10);
    let mut fired = 0;
    for id in &ids {
        let toml = tmp.path().join(format!("{id}.toml"));
        let r = run(&[
            "export",
            out.to_str().unwrap(),
            id,
            "--for",
            "looptune",
            "-o",
            toml.to_str().unwrap(),
        ]);
        assert_ok(&r);
        let r = run(&[
            "replay",
            "--config",
            toml.to_str().unwrap(),
            fixtures.to_str().unwrap(),
            "--format",
            "json",
            "-q",
        ]);
        assert_ok(&r);
        let mut got = BTreeSet::new();
        for line in String::from_utf8(r.stdout).unwrap().lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            if let Some(d) = v["detections"].as_array().and_then(|d| d.first()) {
                got.insert((
                    v["session"].as_str().unwrap().to_string(),
                    d["event"].as_u64().unwrap(),
                    d["kind"].as_str().unwrap().to_string(),
                ));
            }
        }
        let want = found.get(id).cloned().unwrap_or_default();
        assert_eq!(got, want, "configuration {id}");
        fired += want.len();
    }
    assert!(fired > 20, "the grid fires on the fixtures ({fired})");
}

#[test]
fn a_config_file_is_the_whole_selection_and_its_errors_name_the_line() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = write(
        tmp.path(),
        "bad.toml",
        "[detector]\nprofile = \"roo\"\n[params]\nlimit = \"three\"\n",
    );
    let r = run(&[
        "replay",
        "--config",
        bad.to_str().unwrap(),
        "fixtures/sessions",
    ]);
    assert_eq!(r.status.code(), Some(2));
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(
        err.contains("bad.toml:4:") && err.contains("limit"),
        "{err}"
    );
    let ok = write(tmp.path(), "ok.toml", "[detector]\nprofile = \"roo\"\n");
    let r = run(&[
        "replay",
        "--config",
        ok.to_str().unwrap(),
        "--profile",
        "roo",
        "fixtures/sessions",
    ]);
    assert_eq!(r.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&r.stderr).contains("whole selection"));
}

#[test]
fn agents_get_their_own_format_or_a_named_error() {
    let r = run(&[
        "export",
        "--profile",
        "roo",
        "--set",
        "limit=5",
        "--for",
        "roo",
    ]);
    assert_ok(&r);
    let v: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    assert_eq!(
        v["providerProfiles"]["apiConfigs"]["default"]["consecutiveMistakeLimit"],
        5
    );
    let r = run(&[
        "export",
        "--profile",
        "opencode",
        "--set",
        "threshold=4",
        "--for",
        "opencode",
    ]);
    assert_ok(&r);
    let text = String::from_utf8(r.stdout).unwrap();
    assert!(
        text.contains(
            "@@ -32 +32 @@\n-const DOOM_LOOP_THRESHOLD = 3\n+const DOOM_LOOP_THRESHOLD = 4\n"
        ),
        "{text}"
    );
    let r = run(&["export", "--profile", "kilo", "--for", "opencode"]);
    assert_eq!(r.status.code(), Some(2));
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(
        err.contains("parameter `scope` = session cannot be expressed"),
        "{err}"
    );
    let r = run(&["export", "--profile", "gemini-latest", "--for", "qwen-code"]);
    assert_eq!(r.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&r.stderr).contains("family `gemini`"));
    let r = run(&["export", "--for", "looptune"]);
    assert_eq!(r.status.code(), Some(2));
    // Hermes reads YAML; OpenClaw's thresholds are source constants.
    let r = run(&[
        "export",
        "--profile",
        "hermes",
        "--set",
        "same_tool_failure_halt_after=12",
        "--for",
        "hermes",
    ]);
    assert_ok(&r);
    let text = String::from_utf8(r.stdout).unwrap();
    assert_eq!(
        text,
        "tool_loop_guardrails:\n  hard_stop_enabled: true\n  hard_stop_after:\n    same_tool_failure: 12\n"
    );
    assert!(String::from_utf8_lossy(&r.stderr).contains("~/.hermes/config.yaml"));
    let r = run(&[
        "export",
        "--profile",
        "openclaw-2026-05",
        "--set",
        "critical_threshold=15",
        "--for",
        "openclaw",
    ]);
    assert_ok(&r);
    let text = String::from_utf8(r.stdout).unwrap();
    assert!(
        text.contains("@@ -42 +42 @@\n-const CRITICAL_THRESHOLD = 20;\n+const CRITICAL_THRESHOLD = 15;\n@@ -45 +45 @@\n-  enabled: false,\n+  enabled: true,\n"),
        "{text}"
    );
}
