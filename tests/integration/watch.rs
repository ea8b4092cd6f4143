//! `looptune watch` as a process: files written while it runs, its output
//! read as it comes (polled with a generous time-out, never a fixed wait
//! for a detection), stopped by SIGTERM.

use crate::util::*;
use std::io::{BufRead, Write};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const CALL: &str = "{\"type\":\"tool_call\",\"name\":\"read_file\",\"args\":{\"path\":\"a\"}}\n{\"type\":\"tool_result\",\"name\":\"read_file\",\"output\":\"x\"}\n";

fn start_of(id: &str) -> String {
    format!(
        "{{\"type\":\"session\",\"session\":\"{id}\"}}\n{{\"type\":\"user\",\"text\":\"go\"}}\n"
    )
}

fn append(path: &Path, text: &str) {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

struct Live {
    child: Child,
    out: Arc<Mutex<Vec<String>>>,
    err: Arc<Mutex<String>>,
}

impl Live {
    fn start(args: &[&str]) -> Live {
        let mut child = process()
            .arg("watch")
            .args(["--interval", "20", "--format", "json"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let out = Arc::new(Mutex::new(Vec::new()));
        let err = Arc::new(Mutex::new(String::new()));
        let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        let o = out.clone();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                o.lock().unwrap().push(line.unwrap());
            }
        });
        let stderr = std::io::BufReader::new(child.stderr.take().unwrap());
        let e = err.clone();
        std::thread::spawn(move || {
            for line in stderr.lines() {
                let mut e = e.lock().unwrap();
                e.push_str(&line.unwrap());
                e.push('\n');
            }
        });
        Live { child, out, err }
    }

    /// The detections once there are `n` (60 s at most), as JSON.
    fn wait_for(&self, n: usize) -> Vec<serde_json::Value> {
        let t = Instant::now();
        while self.out.lock().unwrap().len() < n {
            assert!(
                t.elapsed() < Duration::from_secs(60),
                "waited for {n} detections: {:?}\nstderr: {}",
                self.out.lock().unwrap(),
                self.err.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        self.detections()
    }

    fn detections(&self) -> Vec<serde_json::Value> {
        let out = self.out.lock().unwrap();
        out.iter()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// Wait until the stderr holds `what`.
    fn wait_err(&self, what: &str) {
        let t = Instant::now();
        while !self.err.lock().unwrap().contains(what) {
            assert!(
                t.elapsed() < Duration::from_secs(60),
                "stderr: {}",
                self.err.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Several looks' worth of time: what should not come has had its chance.
    fn settle(&self) {
        std::thread::sleep(Duration::from_millis(300));
    }

    /// SIGTERM: the watch stops with exit 0.
    fn stop(mut self) -> Vec<serde_json::Value> {
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let t = Instant::now();
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            assert!(t.elapsed() < Duration::from_secs(60), "did not stop");
            std::thread::sleep(Duration::from_millis(10));
        };
        assert_eq!(status.code(), Some(0), "{}", self.err.lock().unwrap());
        self.detections()
    }
}

fn at(d: &serde_json::Value) -> (String, u64, u64) {
    (
        d["session"].as_str().unwrap().to_string(),
        d["event"].as_u64().unwrap(),
        d["strike"].as_u64().unwrap(),
    )
}

#[test]
fn appended_lines_and_a_new_file_report_each_detection_once() {
    let d = tempfile::tempdir().unwrap();
    let a = d.path().join("a.jsonl");
    append(&a, &(start_of("a") + &CALL.repeat(4)));
    let w = Live::start(&["--from-start", d.path().to_str().unwrap()]);
    // The fifth identical call, half written: nothing until its line ends.
    append(&a, "{\"type\":\"tool_call\",\"name\":\"read_file\",");
    w.settle();
    assert!(w.detections().is_empty());
    append(&a, "\"args\":{\"path\":\"a\"}}\n");
    assert_eq!(at(&w.wait_for(1)[0]), ("a".into(), 11, 1));
    // A file appearing in the folder.
    std::fs::write(d.path().join("b.jsonl"), start_of("b") + &CALL.repeat(5)).unwrap();
    let got = w.wait_for(2);
    assert_eq!(at(&got[1]), ("b".into(), 11, 1));
    assert!(got[1]["file"].as_str().unwrap().ends_with("b.jsonl"));
    w.settle();
    assert_eq!(w.stop().len(), 2);
}

#[test]
fn a_truncated_file_starts_over_and_a_rotated_one_is_not_read_again() {
    let d = tempfile::tempdir().unwrap();
    let a = d.path().join("a.jsonl");
    let w = Live::start(&[d.path().to_str().unwrap()]);
    w.settle();
    append(&a, &(start_of("a") + &CALL.repeat(5)));
    w.wait_for(1);
    // Rotated: renamed away inside the watched folder, a new file at the path.
    std::fs::rename(&a, d.path().join("a.1.jsonl")).unwrap();
    w.settle();
    append(&a, &(start_of("a") + &CALL.repeat(5)));
    let got = w.wait_for(2);
    assert!(
        got[1]["file"].as_str().unwrap().ends_with("/a.jsonl"),
        "{got:?}"
    );
    // Truncated, then written again from its start.
    std::fs::write(&a, start_of("a")).unwrap();
    w.wait_err("truncated");
    append(&a, &CALL.repeat(5));
    let got = w.wait_for(3);
    assert_eq!(at(&got[2]), ("a".into(), 11, 1));
    w.settle();
    let all = w.stop();
    assert_eq!(all.len(), 3, "{all:?}");
    assert!(all
        .iter()
        .all(|d| d["file"].as_str().unwrap().ends_with("/a.jsonl")));
}

#[test]
fn on_detect_gets_the_detection_as_json_and_a_failing_command_is_a_warning() {
    let d = tempfile::tempdir().unwrap();
    let logs = d.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    let got = d.path().join("notified.jsonl");
    let cmd = format!("cat >> '{}'; exit 3", got.display());
    let w = Live::start(&["--from-start", "--on-detect", &cmd, logs.to_str().unwrap()]);
    append(&logs.join("s.jsonl"), &(start_of("s") + &CALL.repeat(5)));
    let printed = w.wait_for(1);
    w.wait_err("--on-detect");
    assert!(w.err.lock().unwrap().contains("failed (exit status: 3)"));
    let text = std::fs::read_to_string(&got).unwrap();
    let sent: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
    assert_eq!(sent, printed[0]);
    assert_eq!(sent["profile"], "gemini-latest");
    assert_eq!(sent["kind"], "tool_call");
    assert_eq!(w.stop().len(), 1);
}

/// A fixture written line by line: the detections are `replay --all`'s.
#[test]
fn a_fixture_fed_line_by_line_gives_what_replay_all_gives() {
    for (profile, fixture) in [
        ("gemini-latest", "loop_identical_read.jsonl"),
        ("blade-legacy", "clean_polling_process.jsonl"),
        ("openhands-v1", "loop_identical_read.jsonl"),
        ("openrouter-sdk", "clean_polling_process.jsonl"),
    ] {
        let src = root().join("fixtures/sessions").join(fixture);
        let r = run(&[
            "replay",
            "--all",
            "--format",
            "json",
            "-q",
            "--profile",
            profile,
            src.to_str().unwrap(),
        ]);
        assert_ok(&r);
        let replayed: serde_json::Value =
            serde_json::from_slice(r.stdout.split(|&b| b == b'\n').next().unwrap()).unwrap();
        let key = |d: &serde_json::Value| {
            (
                d["event"].as_u64(),
                d["strike"].as_u64(),
                d["kind"].to_string(),
                d["detail"].to_string(),
            )
        };
        let want: Vec<_> = replayed["detections"]
            .as_array()
            .unwrap()
            .iter()
            .map(key)
            .collect();
        assert!(!want.is_empty(), "{profile} on {fixture}");
        let d = tempfile::tempdir().unwrap();
        let fed = d.path().join(fixture);
        std::fs::write(&fed, "").unwrap();
        let w = Live::start(&[
            "--profile",
            profile,
            "--idle",
            "1",
            d.path().to_str().unwrap(),
        ]);
        w.settle();
        for line in std::fs::read_to_string(&src).unwrap().split_inclusive('\n') {
            append(&fed, line);
            std::thread::sleep(Duration::from_millis(3));
        }
        w.wait_for(want.len());
        w.settle();
        let got: Vec<_> = w.stop().iter().map(key).collect();
        assert_eq!(got, want, "{profile} on {fixture}");
    }
}

/// A whole-document log (Gemini CLI's chat JSON, no final newline) is cut at
/// its last newline on the first look, while it may still be growing: no
/// warning for that; it is read whole once its size holds.
#[test]
fn a_document_seen_growing_is_no_warning() {
    let Some(corpus) = shared_corpus() else {
        return;
    };
    let src = corpus.join("gemini-cli/M-Gemini/session-2025-11-19T20-45-42f4bde7.json");
    let d = tempfile::tempdir().unwrap();
    std::fs::copy(&src, d.path().join("session.json")).unwrap();
    let w = Live::start(&["--from-start", d.path().to_str().unwrap()]);
    w.settle();
    let err = w.err.lock().unwrap().clone();
    w.stop();
    assert!(!err.contains("not a recognised"), "{err}");
}
