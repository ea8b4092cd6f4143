//! Provenance end to end: the file and line (or JSON pointer) every record
//! names holds the call it came from, for every input format, on the bundled
//! fixtures, on hand-made whole documents and on `../shared/corpus`; and it
//! survives `looptune import -o` so a replay of the converted file names the
//! original log.

use crate::util::run;
use looptune::event::{Corpus, Record};
use looptune::input::{read_corpus, ReadOptions};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::PathBuf;

fn read(paths: &[PathBuf]) -> Corpus {
    let opts = ReadOptions {
        lenient: true,
        ..Default::default()
    };
    read_corpus(paths, &opts).unwrap_or_else(|e| panic!("{e}"))
}

/// A file's text, gunzipped when it is gzip; `LOG.eval!MEMBER` is a member
/// of a ZIP.
fn text_of(path: &str) -> String {
    if let Some((zip, member)) = path.split_once('!') {
        let f = std::fs::File::open(zip).unwrap_or_else(|e| panic!("{zip}: {e}"));
        let mut z = zip::ZipArchive::new(f).unwrap();
        let mut s = String::new();
        z.by_name(member).unwrap().read_to_string(&mut s).unwrap();
        return s;
    }
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut s = String::new();
        flate2::read::MultiGzDecoder::new(&bytes[..])
            .read_to_string(&mut s)
            .unwrap();
        s
    } else {
        String::from_utf8(bytes).unwrap()
    }
}

/// Check every tool call of `corpus`: its provenance resolves, and the JSON
/// value it names (the line of a JSONL file, the pointer inside a whole
/// document or inside that line) mentions the call's name. Returns the calls
/// checked per format.
fn check_calls(corpus: &Corpus) -> BTreeMap<String, usize> {
    // Per file: the whole document (if it is one) and its lines.
    let mut texts: HashMap<String, (Option<Value>, Vec<String>)> = HashMap::new();
    let mut checked: BTreeMap<String, usize> = BTreeMap::new();
    for (si, s) in corpus.sessions.iter().enumerate() {
        for (ei, e) in s.events.iter().enumerate() {
            let Record::ToolCall { name, args, id } = &e.record else {
                continue;
            };
            let format = corpus.files[e.origin.file as usize].format.clone();
            let p = corpus
                .provenance(si, ei as u32 + 1)
                .unwrap_or_else(|| panic!("{} event {}: no provenance", s.id, ei + 1));
            let (doc, lines) = texts.entry(p.file.to_string()).or_insert_with(|| {
                let text = text_of(p.file);
                let doc = serde_json::from_str::<Value>(&text)
                    .ok()
                    .filter(|_| !p.file.ends_with(".jsonl"));
                (doc, text.split('\n').map(str::to_string).collect())
            });
            let held: Value = match doc {
                // A whole document: the pointer is inside it.
                Some(doc) => {
                    // A document that is one native record (an OpenHands V1
                    // event file) needs no pointer.
                    let ptr = p.pointer.unwrap_or_else(|| {
                        assert_eq!(
                            format, "openhands-v1",
                            "{p}: a whole document needs a pointer"
                        );
                        ""
                    });
                    let line = p.line.unwrap_or_else(|| panic!("{p}: no line"));
                    assert!(line as usize <= lines.len(), "{p}");
                    doc.pointer(ptr)
                        .unwrap_or_else(|| panic!("{p}#{ptr}: nothing there"))
                        .clone()
                }
                // JSONL: the line, and the pointer inside it when there is one.
                _ => {
                    let line = p
                        .line
                        .unwrap_or_else(|| panic!("{p}: a JSONL record needs a line"));
                    let raw = &lines[line as usize - 1];
                    let v: Value = match serde_json::from_str(raw.trim_start_matches('\u{feff}')) {
                        Ok(v) => v,
                        // A pretty-printed record opens at its line (the
                        // Gemini CLI telemetry file): the value from there.
                        Err(e) => {
                            let rest = lines[line as usize - 1..].join("\n");
                            serde_json::Deserializer::from_str(&rest)
                                .into_iter::<Value>()
                                .next()
                                .and_then(Result::ok)
                                .unwrap_or_else(|| panic!("{p}: not JSON ({e})"))
                        }
                    };
                    match p.pointer {
                        Some(ptr) => v
                            .pointer(ptr)
                            .unwrap_or_else(|| panic!("{p} {ptr}: nothing there"))
                            .clone(),
                        None => v,
                    }
                }
            };
            let shown = held.to_string();
            // The call's name, id or an argument, as the native record has
            // them (importers name some calls: Goose's unparsable ones, and
            // SWE-agent steps carry the command, not the tool).
            let escaped = |t: &str| {
                let q = serde_json::to_string(t).unwrap();
                q[1..q.len() - 1].to_string()
            };
            let arg = args.values().filter_map(Value::as_str).any(|a| {
                let head: String = a.trim().chars().take(30).collect();
                !head.is_empty() && shown.contains(&escaped(&head))
            });
            assert!(
                shown.contains(&escaped(name))
                    || id.as_deref().is_some_and(|i| shown.contains(i))
                    || arg,
                "{} event {} ({format}): {p} does not hold the call `{name}`: {}",
                s.id,
                ei + 1,
                shown.chars().take(300).collect::<String>()
            );
            *checked.entry(format).or_default() += 1;
        }
    }
    checked
}

#[test]
fn bundled_fixtures_name_the_line_of_every_call() {
    let got = check_calls(&read(&[
        PathBuf::from("fixtures/sessions"),
        PathBuf::from("tests/fixtures/import"),
    ]));
    for f in [
        "canonical",
        "claude-code",
        "codex",
        "goose",
        "opencode",
        "openai-chat",
        "gemini-cli",
        "openhands-v1",
        "gemini-telemetry",
    ] {
        assert!(got.get(f).is_some_and(|n| *n > 0), "{f}: {got:?}");
    }
}

/// The 2026 formats: Inspect AI (ZIP members and the `.json`, `NaN` and all)
/// and Harbor ATIF (continuations and embedded subagents).
#[test]
fn the_formats_of_2026_name_the_place_of_every_call() {
    let dir = PathBuf::from("tests/fixtures/formats-2026");
    let got = check_calls(&read(&[
        dir.join("inspect/deflate.eval"),
        dir.join("inspect/zstd.eval"),
        dir.join("atif"),
    ]));
    assert!(got.get("inspect-ai").is_some_and(|n| *n >= 14), "{got:?}");
    assert!(got.get("atif").is_some_and(|n| *n >= 7), "{got:?}");
}

/// Whole documents of the formats the bundled fixtures lack, pretty-printed
/// (lines) and minified (pointers alone tell the messages apart).
#[test]
fn whole_documents_name_a_pointer_that_holds_the_call() {
    let d = tempfile::tempdir().unwrap();
    let call = |name: &str, id: &str| serde_json::json!({"id": id, "type": "function", "function": {"name": name, "arguments": "{\"path\":\"a\"}"}});
    let chat = serde_json::json!([
        {"role": "system", "content": "s"},
        {"role": "user", "content": "fix it"},
        {"role": "assistant", "content": null, "tool_calls": [call("read_a", "c1")]},
        {"role": "tool", "tool_call_id": "c1", "content": "x"},
        {"role": "assistant", "content": null, "tool_calls": [call("read_b", "c2"), call("edit_c", "c3")]},
    ]);
    let openhands = serde_json::json!([
        {"id": 0, "source": "user", "action": "message", "args": {"content": "task"}},
        {"id": 1, "source": "agent", "action": "run", "args": {"command": "ls"},
         "tool_call_metadata": {"function_name": "execute_bash", "tool_call_id": "t1",
            "model_response": {"model": "m", "choices": [{"message": {"tool_calls": [
                {"id": "t1", "function": {"name": "execute_bash", "arguments": "{\"command\":\"ls\"}"}}]}}]}}},
        {"id": 2, "source": "environment", "observation": "run", "content": "out", "cause": 1,
         "tool_call_metadata": {"function_name": "execute_bash", "tool_call_id": "t1"}},
    ]);
    let gemini = serde_json::json!({"sessionId": "g", "projectHash": "h", "messages": [
        {"id": "1", "type": "user", "content": "hi"},
        {"id": "2", "type": "gemini", "content": "", "toolCalls": [
            {"id": "k", "name": "list_directory", "args": {"path": "."}, "status": "success"}]},
    ]});
    let mut n = 0;
    for (name, doc) in [
        ("chat.json", &chat),
        ("openhands.json", &openhands),
        ("gemini.json", &gemini),
    ] {
        for pretty in [true, false] {
            let file = d
                .path()
                .join(format!("{}{name}", if pretty { "p-" } else { "m-" }));
            let text = if pretty {
                serde_json::to_string_pretty(doc).unwrap()
            } else {
                doc.to_string()
            };
            std::fs::write(&file, text).unwrap();
            let c = read(&[file]);
            n += check_calls(&c).values().sum::<usize>();
            let e = c.sessions[0]
                .events
                .iter()
                .position(|e| matches!(e.record, Record::ToolCall { .. }))
                .unwrap();
            let p = c.provenance(0, e as u32 + 1).unwrap();
            assert!(p.pointer.is_some(), "{name}: {p}");
            if pretty {
                assert!(p.line.unwrap() > 1, "{name}: {p}");
            }
        }
    }
    assert_eq!(n, 2 * (3 + 1 + 1));
}

#[test]
fn real_corpus_names_the_line_or_pointer_of_every_call() {
    let Some(root) = crate::util::shared_corpus() else {
        return;
    };
    let got = check_calls(&read(&[root]));
    for f in [
        "claude-code",
        "codex",
        "gemini-cli",
        "openai-chat",
        "openhands",
        "swe-agent",
    ] {
        assert!(got.get(f).is_some_and(|n| *n > 10), "{f}: {got:?}");
    }
}

/// `replay --format json` detections carry `file` and `line`; after
/// `import -o`, a replay of the converted file names the original file and
/// line, not the converted one.
#[test]
fn detections_name_the_original_file_through_import() {
    let d = tempfile::tempdir().unwrap();
    let src = "tests/fixtures/import/claude-edge.jsonl";
    let loops = "fixtures/sessions/loop_identical_read.jsonl";
    let conv = d.path().join("conv.jsonl");
    let o = run(&[
        "import",
        "--lenient",
        src,
        loops,
        "-o",
        conv.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&conv).unwrap();
    assert!(
        text.contains(&format!("\"src\":{{\"file\":\"{src}\",\"line\":")),
        "{text}"
    );

    let direct = run(&["replay", "--format", "json", loops]);
    let via = run(&["replay", "--format", "json", conv.to_str().unwrap()]);
    let dets = |o: &std::process::Output| -> Vec<Value> {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|v| v["session"] == "loop_identical_read")
            .flat_map(|v| v["detections"].as_array().unwrap().clone())
            .collect()
    };
    let (a, b) = (dets(&direct), dets(&via));
    assert!(!a.is_empty());
    assert_eq!(a, b, "the converted file names the original place");
    assert_eq!(a[0]["file"], loops);
    let line = a[0]["line"].as_u64().unwrap() as usize;
    let held = std::fs::read_to_string(loops).unwrap();
    let held = held.lines().nth(line - 1).unwrap();
    assert!(
        held.contains("\"tool_call\"") && held.contains("read_file"),
        "{held}"
    );

    // The table says file:line too.
    let table = run(&["replay", conv.to_str().unwrap()]);
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(table.contains(&format!("{loops}:{line}")), "{table}");
}

/// A canonical `src` that is not what the format says is an error naming the field.
#[test]
fn bad_src_fields_are_named() {
    for (src, want) in [
        (r#"5"#, "field `src` must be an object"),
        (r#"{"line":3}"#, "missing field `src.file`"),
        (
            r#"{"file":"a","line":0}"#,
            "field `src.line` must be a positive integer",
        ),
        (
            r#"{"file":"a","pointer":"x"}"#,
            "field `src.pointer` must be a JSON pointer",
        ),
    ] {
        let line = format!(r#"{{"type":"tool_call","name":"x","args":{{}},"src":{src}}}"#);
        let e = looptune::input::parse_canonical("f.jsonl", "f", line.as_bytes(), false)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with(&format!("f.jsonl:1: {want}")), "{src}: {e}");
    }
    let ok = r#"{"type":"tool_call","name":"x","args":{},"src":{"file":"o.json","line":7,"pointer":"/messages/2","later":1}}"#;
    let fs = looptune::input::parse_canonical("f.jsonl", "f", ok.as_bytes(), false).unwrap();
    let place = fs.sessions[0].1[0].origin.place.as_deref().unwrap();
    assert_eq!(place.file.as_deref(), Some("o.json"));
    assert_eq!(place.line, Some(7));
    assert_eq!(place.pointer.as_deref(), Some("/messages/2"));
}

/// A JUnit failure for a false positive names the file and line it fired at.
#[test]
fn junit_failures_name_file_and_line() {
    let d = tempfile::tempdir().unwrap();
    let xml = d.path().join("j.xml");
    let o = run(&[
        "replay",
        "fixtures/sessions",
        "--labels",
        "fixtures/labels.csv",
        "--junit",
        xml.to_str().unwrap(),
        "--junit-sessions",
    ]);
    assert!(
        o.status.code().is_some(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let junit = std::fs::read_to_string(&xml).unwrap();
    let want = "event 25 (fixtures/sessions/clean_polling_process.jsonl:25)";
    assert!(junit.contains(want), "{junit}");
    let held = std::fs::read_to_string("fixtures/sessions/clean_polling_process.jsonl").unwrap();
    assert!(held.lines().nth(24).unwrap().contains("\"tool_call\""));
}
