//! zstd beside gzip (issue #26 item 1): any input may be zstd-compressed
//! (`*.jsonl.zst`, as Codex archives its rollouts), read under the same byte
//! and ratio caps as gzip, a damaged stream is an error at its line, and
//! compressing a corpus changes no verdict.

use crate::util::{process, run, shared_corpus};
use std::path::Path;
use std::process::Output;

const SESSION: &str = "{\"type\":\"tool_call\",\"name\":\"ls\",\"args\":{}}\n";

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn zstd_file(path: &Path, bytes: &[u8]) {
    std::fs::write(path, zstd::encode_all(bytes, 3).unwrap()).unwrap();
}

/// Copy every file under `from` to `to`, zstd-compressing those not already
/// compressed (`NAME` becomes `NAME.zst`).
fn compress_tree(from: &Path, to: &Path) -> usize {
    let mut n = 0;
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            std::fs::create_dir_all(to.join(&name)).unwrap();
            n += compress_tree(&path, &to.join(&name));
        } else if name.ends_with(".gz") || name.ends_with(".md") || name.ends_with(".csv") {
            std::fs::copy(&path, to.join(&name)).unwrap();
        } else {
            zstd_file(
                &to.join(format!("{name}.zst")),
                &std::fs::read(&path).unwrap(),
            );
            n += 1;
        }
    }
    n
}

/// `replay --format json --all` of `dir` under `profile`, with `extra` flags
/// (its output is larger than a pipe holds: read as it is written).
fn replay(dir: &Path, profile: &str, extra: &[&str]) -> String {
    let mut args = vec![
        "replay",
        "--format",
        "json",
        "--all",
        "--profile",
        profile,
        dir.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = process().args(&args).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    String::from_utf8(o.stdout).unwrap()
}

/// The replay of a compressed copy equals the replay of the original, file
/// names aside (`DIR.zst/x.jsonl.zst` read as `DIR/x.jsonl`).
fn same_verdicts(original: &Path, extra: &[&str]) {
    let d = tempfile::tempdir().unwrap();
    let copy = d.path().join("z");
    std::fs::create_dir_all(&copy).unwrap();
    let n = compress_tree(original, &copy);
    assert!(n > 10, "{n} files compressed");
    for profile in ["gemini-latest", "gemini-2025-07", "opencode", "crush"] {
        let plain = replay(original, profile, extra);
        let zst = replay(&copy, profile, extra)
            .replace(copy.to_str().unwrap(), original.to_str().unwrap())
            .replace(".zst\"", "\"");
        assert!(plain.lines().count() > 10, "{plain}");
        assert_eq!(plain, zst, "{profile}");
    }
}

#[test]
fn compressing_the_conformance_sessions_changes_no_verdict() {
    // --lenient: the cases' `expected/` answers are JSON Lines no reader
    // knows, which a strict walk refuses.
    same_verdicts(Path::new("tests/conformance"), &["--lenient"]);
}

#[test]
fn compressing_the_corpus_changes_no_verdict() {
    let Some(corpus) = shared_corpus() else {
        return;
    };
    same_verdicts(&corpus, &["--lenient"]);
}

#[test]
fn zstd_past_its_byte_cap_is_a_clear_error() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("a.jsonl.zst");
    zstd_file(&f, SESSION.repeat(100).as_bytes());
    let file = f.to_str().unwrap();
    let o = run(&["replay", "--max-gzip-bytes", "1000", file]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("a.jsonl.zst: zstd stream expands to more than 1000 bytes")
            && err.contains("--max-gzip-bytes"),
        "{err}"
    );
    let o = run(&["replay", file]);
    assert!(o.status.success(), "{}", stderr(&o));
}

/// A zstd bomb: 24 MiB of newlines (past the ratio's 16 MiB floor) stored in
/// a few kilobytes. The caps stop it while it is decompressed, on one thread
/// or many. (24, not 64 MiB: the last run parses every line, and a debug
/// build on a loaded machine took most of the hang guard's minute over 64.)
#[test]
fn zstd_bomb_past_its_ratio_cap_is_a_clear_error() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("bomb.jsonl.zst");
    zstd_file(&f, &vec![b'\n'; 24 << 20]);
    assert!(std::fs::metadata(&f).unwrap().len() < 24 << 10);
    let file = f.to_str().unwrap();
    for extra in [&[][..], &["--jobs", "1"]] {
        let mut args = vec!["replay", file];
        args.extend_from_slice(extra);
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2));
        let err = stderr(&o);
        assert!(
            err.contains("bomb.jsonl.zst: zstd stream expands more than 100 times")
                && err.contains("--max-gzip-ratio"),
            "{err}"
        );
    }
    let o = run(&[
        "replay",
        "--allow-empty",
        "--max-gzip-ratio",
        "100000",
        file,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn truncated_zstd_names_file_and_line() {
    let d = tempfile::tempdir().unwrap();
    let text =
        "{\"type\":\"tool_call\",\"name\":\"read_file\",\"args\":{\"path\":\"a\"}}\n".repeat(5000);
    let bytes = zstd::encode_all(text.as_bytes(), 3).unwrap();
    let p = d.path().join("cut.jsonl.zst");
    std::fs::write(&p, &bytes[..bytes.len() / 2]).unwrap();
    let o = run(&["replay", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    let re =
        regex::Regex::new(r"cut\.jsonl\.zst:\d+: zstd stream is damaged or truncated").unwrap();
    assert!(re.is_match(&err), "{err}");
}

/// A folder walk picks up `.zst` files, and their stem drops `.jsonl.zst`.
#[test]
fn walked_zstd_files_are_read_under_their_stem() {
    let d = tempfile::tempdir().unwrap();
    zstd_file(&d.path().join("run-1.jsonl.zst"), SESSION.as_bytes());
    let o = run(&["replay", "--format", "json", d.path().to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("\"session\":\"run-1\""), "{out}");
}
