//! `looptune label` in a real pseudo-terminal: the binary starts, draws, takes
//! keys, and leaves a labels file that `sweep --labels` accepts; `--suggest`
//! and the errors a user meets without a terminal or with a bad labels file.

use crate::util::process;
use portable_pty::{native_pty_system, CommandBuilder, PtySize};
use std::io::{Read, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const LOOP: &str = "{\"type\":\"user\",\"text\":\"go\"}\n{\"type\":\"tool_call\",\"name\":\"t\",\"args\":{\"a\":1}}\n{\"type\":\"tool_result\",\"output\":\"x\"}\n{\"type\":\"tool_call\",\"name\":\"t\",\"args\":{\"a\":1}}\n{\"type\":\"tool_result\",\"output\":\"x\"}\n{\"type\":\"tool_call\",\"name\":\"t\",\"args\":{\"a\":1}}\n{\"type\":\"tool_result\",\"output\":\"x\"}\n{\"type\":\"tool_call\",\"name\":\"t\",\"args\":{\"a\":1}}\n{\"type\":\"tool_result\",\"output\":\"x\"}\n{\"type\":\"tool_call\",\"name\":\"t\",\"args\":{\"a\":1}}\n{\"type\":\"tool_result\",\"output\":\"x\"}\n{\"type\":\"tool_call\",\"name\":\"t\",\"args\":{\"a\":1}}\n";
const CALM: &str =
    "{\"type\":\"user\",\"text\":\"hi\"}\n{\"type\":\"content\",\"text\":\"hello\"}\n";

fn wait_for(what: &str, deadline: Duration, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_default()
}

#[test]
fn label_in_a_pty_writes_the_labels_file() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("loopy.jsonl"), LOOP).unwrap();
    std::fs::write(d.path().join("calm.jsonl"), CALM).unwrap();
    let labels = d.path().join("labels.csv");
    std::fs::write(
        &labels,
        "session,label,onset_turn,note\nother,clean,,kept\n",
    )
    .unwrap();

    let pty = native_pty_system()
        .openpty(PtySize {
            rows: 30,
            cols: 110,
            pixel_width: 0,
            pixel_height: 0,
        })
        .unwrap();
    let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_looptune"));
    cmd.args(["label", "--labels"]);
    cmd.arg(&labels);
    cmd.arg(d.path().join("loopy.jsonl"));
    cmd.arg(d.path().join("calm.jsonl"));
    cmd.env("TERM", "xterm-256color");
    cmd.cwd(d.path());
    let mut child = pty.slave.spawn_command(cmd).unwrap();
    drop(pty.slave);
    // Drain the terminal output on a thread, or the child blocks on a full pty.
    let screen = Arc::new(Mutex::new(Vec::<u8>::new()));
    let mut reader = pty.master.try_clone_reader().unwrap();
    let sink = screen.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock().unwrap().extend_from_slice(&buf[..n]);
        }
    });
    let mut keys = pty.master.take_writer().unwrap();
    let shown = |s: &str| String::from_utf8_lossy(&screen.lock().unwrap()).contains(s);
    let start = Instant::now();
    // ratatui moves the cursor over blanks, so look for single words.
    while !(shown("labelled") && shown("turn 1")) {
        if start.elapsed() > Duration::from_secs(60) {
            child.kill().ok();
            panic!(
                "the queue was not drawn; the terminal got: {:?}",
                String::from_utf8_lossy(&screen.lock().unwrap())
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    // The flagged session is first: move to turn 3 and label it a loop there.
    keys.write_all(b"jj").unwrap();
    keys.flush().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    keys.write_all(b"l").unwrap();
    keys.flush().unwrap();
    wait_for("the loop label", Duration::from_secs(20), || {
        read(&labels).contains("loopy,loop,3")
    });
    keys.write_all(b"c").unwrap();
    keys.flush().unwrap();
    wait_for("the clean label", Duration::from_secs(20), || {
        read(&labels).contains("calm,clean")
    });
    keys.write_all(b"q").unwrap();
    keys.flush().unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > Duration::from_secs(20) {
            child.kill().ok();
            panic!("looptune label did not quit on q");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status:?}");
    assert_eq!(
        read(&labels),
        "session,label,onset_turn,note\nother,clean,,kept\nloopy,loop,3,\ncalm,clean,,\n"
    );
    // The file is valid input for sweep --labels (`other`, not in the input, is a warning).
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_looptune"))
        .args(["sweep", "--quiet", "--out"])
        .arg(d.path().join("out"))
        .arg("--labels")
        .arg(&labels)
        .arg(d.path().join("loopy.jsonl"))
        .arg(d.path().join("calm.jsonl"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: serde_json::Value =
        serde_json::from_str(&read(&d.path().join("out").join("summary.json"))).unwrap();
    assert_eq!(summary["labels"]["loops"], 1, "{summary}");
    assert_eq!(summary["labels"]["clean"], 1, "{summary}");
}

fn corpus(d: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let a = d.join("loopy.jsonl");
    let b = d.join("calm.jsonl");
    std::fs::write(&a, LOOP).unwrap();
    std::fs::write(&b, CALM).unwrap();
    (a, b)
}

#[test]
fn suggest_prints_the_ranked_queue_without_labelled_sessions() {
    let d = tempfile::tempdir().unwrap();
    let (a, b) = corpus(d.path());
    let out = process()
        .args(["label", "--suggest"])
        .arg(&a)
        .arg(&b)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("session,file,reason,gemini,"),
        "{text}"
    );
    assert!(lines[1].starts_with("loopy,"), "flagged first: {text}");
    assert!(lines[1].contains("loopy.jsonl,disagree: "), "{text}");
    assert!(lines[2].starts_with("calm,"), "{text}");
    assert!(lines[2].contains(",no configuration flags"), "{text}");
    // With a labels file, labelled sessions leave the queue.
    let labels = d.path().join("l.csv");
    std::fs::write(&labels, "session,label,onset_turn\nloopy,loop,2\n").unwrap();
    let out = process()
        .args(["label", "--suggest", "--labels"])
        .arg(&labels)
        .arg(&a)
        .arg(&b)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), 2, "{text}");
    assert!(text.lines().nth(1).unwrap().starts_with("calm,"), "{text}");
}

#[test]
fn clear_errors_without_a_terminal_and_for_a_bad_labels_file() {
    let d = tempfile::tempdir().unwrap();
    let (a, _) = corpus(d.path());
    let labels = d.path().join("l.csv");
    let out = process()
        .args(["label", "--labels"])
        .arg(&labels)
        .arg(&a)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("needs a terminal") && err.contains("--suggest"),
        "{err}"
    );
    assert!(!labels.exists(), "nothing written");
    let out = process()
        .args(["label", "--labels"])
        .arg(&a)
        .arg(&a)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("refusing to overwrite"), "{err}");
    assert_eq!(read(&a), LOOP);
    std::fs::write(&labels, "session,label,onset_turn\nx,maybe,\n").unwrap();
    let out = process()
        .args(["label", "--suggest", "--labels"])
        .arg(&labels)
        .arg(&a)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("l.csv:2: field `label` must be `loop` or `clean`, not `maybe`"),
        "{err}"
    );
}

/// A session of nine turns: distinct calls, a `needle` at turn 3, then the
/// same call six times (the detectors fire there).
fn seek_session() -> String {
    let call = |name: &str, args: &str| {
        format!("{{\"type\":\"tool_call\",\"name\":\"{name}\",\"args\":{args}}}\n{{\"type\":\"tool_result\",\"output\":\"x\"}}\n")
    };
    let mut s = String::from("{\"type\":\"user\",\"text\":\"go\"}\n");
    s.push_str(&call("t", "{\"a\":1}"));
    s.push_str(&call("t", "{\"a\":2}"));
    s.push_str(&call("needle", "{\"b\":3}"));
    for _ in 0..6 {
        s.push_str(&call("t", "{\"a\":9}"));
    }
    s
}

/// Every key for long sessions, in a real terminal, each pinned by the label
/// it leads to: G (last turn), g then ] ] [ (first detection marker),
/// PageDown, PageUp, / search, e (a note), the question about the old note
/// when a label changes, and the help overlay's text.
#[test]
fn label_keys_for_long_sessions_in_a_pty() {
    let d = tempfile::tempdir().unwrap();
    let seek = d.path().join("seek.jsonl");
    std::fs::write(&seek, seek_session()).unwrap();
    // The first turn any family's stock profile fires at: the first marker.
    let suggest = process()
        .args(["label", "--suggest"])
        .arg(&seek)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&suggest.stdout).to_string();
    let row = text.lines().nth(1).expect("one session");
    let marker: u32 = row
        .split(',')
        .skip(3)
        .filter_map(|c| c.parse().ok())
        .min()
        .expect("a detection");
    let labels = d.path().join("labels.csv");
    std::fs::write(&labels, "session,label,onset_turn\n").unwrap();

    let pty = native_pty_system()
        .openpty(PtySize {
            rows: 40,
            cols: 120,
            pixel_width: 0,
            pixel_height: 0,
        })
        .unwrap();
    let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_looptune"));
    cmd.args(["label", "--labels"]);
    cmd.arg(&labels);
    cmd.arg(&seek);
    cmd.env("TERM", "xterm-256color");
    cmd.cwd(d.path());
    let mut child = pty.slave.spawn_command(cmd).unwrap();
    drop(pty.slave);
    let screen = Arc::new(Mutex::new(Vec::<u8>::new()));
    let mut reader = pty.master.try_clone_reader().unwrap();
    let sink = screen.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock().unwrap().extend_from_slice(&buf[..n]);
        }
    });
    let mut keys = pty.master.take_writer().unwrap();
    let shown = |s: &str| String::from_utf8_lossy(&screen.lock().unwrap()).contains(s);
    wait_for("the queue", Duration::from_secs(60), || {
        shown("labelled") && shown("turn")
    });
    let mut press = |k: &[u8]| {
        keys.write_all(k).unwrap();
        keys.flush().unwrap();
        // One key at a time: an escape sequence must not run into the next key.
        std::thread::sleep(Duration::from_millis(150));
    };
    let labelled = |onset: u32| {
        wait_for(
            &format!("seek,loop,{onset}"),
            Duration::from_secs(20),
            || read(&labels).contains(&format!("seek,loop,{onset}\n")),
        );
    };
    let undone = || {
        wait_for("the undo", Duration::from_secs(20), || {
            !read(&labels).contains("seek,")
        });
    };
    // G: the last turn.
    press(b"G");
    press(b"l");
    labelled(9);
    press(b"u");
    undone();
    // g, then ] ] [ : back at the first detection marker.
    for k in [b"g", b"]", b"]", b"["] {
        press(k);
    }
    press(b"l");
    labelled(marker);
    press(b"u");
    undone();
    // PageDown from the first turn: ten turns on, at most the last.
    press(b"g");
    press(b"\x1b[6~");
    press(b"l");
    labelled(9);
    press(b"u");
    undone();
    // PageUp from the last turn: ten back, at the top (turn 0), then j.
    press(b"G");
    press(b"\x1b[5~");
    press(b"j");
    press(b"l");
    labelled(1);
    press(b"u");
    undone();
    // / needle Enter: the turn that calls it.
    press(b"g");
    for k in b"/needle" {
        press(&[*k]);
    }
    press(b"\r");
    press(b"l");
    labelled(3);
    // e: a note, written to a new `note` column.
    press(b"e");
    for k in b"why" {
        press(&[*k]);
    }
    press(b"\r");
    wait_for("the note", Duration::from_secs(20), || {
        read(&labels) == "session,label,onset_turn,note\nseek,loop,3,why\n"
    });
    // Relabelled: the screen asks about the old note, n clears it.
    press(b"c");
    wait_for("the question", Duration::from_secs(20), || shown("y/n"));
    press(b"n");
    wait_for("the cleared note", Duration::from_secs(20), || {
        read(&labels) == "session,label,onset_turn,note\nseek,clean,,\n"
    });
    // ? : the help, which tells the truth about j.
    press(b"?");
    wait_for("the help", Duration::from_secs(20), || {
        shown("previous") && shown("PgDn")
    });
    press(b"x");
    press(b"q");
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > Duration::from_secs(20) {
            child.kill().ok();
            panic!("looptune label did not quit on q");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status:?}");
    assert_eq!(
        read(&labels),
        "session,label,onset_turn,note\nseek,clean,,\n"
    );
}
