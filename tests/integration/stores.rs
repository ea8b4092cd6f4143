//! Logs that are not one file of lines: OpenHands V1 conversation folders
//! (`tests/fixtures/import/openhands-v1*`), OpenCode's and Goose's SQLite
//! databases (built here with the producers' own table definitions), and
//! Gemini CLI's telemetry file (`tests/fixtures/import/gemini-telemetry.json`).

use crate::util::run;
use looptune::event::{Corpus, Record, Session};
use looptune::input::{read_corpus, ReadOptions};
use rusqlite::Connection;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn read(paths: &[PathBuf], lenient: bool) -> looptune::error::Result<Corpus> {
    read_corpus(
        paths,
        &ReadOptions {
            lenient,
            ..Default::default()
        },
    )
}

fn fx(p: &str) -> PathBuf {
    PathBuf::from("tests/fixtures/import").join(p)
}

fn types(s: &Session) -> Vec<&str> {
    s.events.iter().map(|e| e.record.type_name()).collect()
}

fn session<'a>(c: &'a Corpus, id: &str) -> &'a Arc<Session> {
    c.sessions
        .iter()
        .find(|s| s.id == id)
        .unwrap_or_else(|| panic!("no session {id}"))
}

fn stdout(args: &[&str]) -> (i32, String, String) {
    let o = run(args);
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The detections of one replay line, as (profile, kind, turn, event, file).
fn detections(line: &str) -> Vec<(String, String, u64, u64, String)> {
    let v: Value = serde_json::from_str(line).unwrap();
    v["detections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["profile"].as_str().unwrap().to_string(),
                d["kind"].as_str().unwrap().to_string(),
                d["turn"].as_u64().unwrap(),
                d["event"].as_u64().unwrap(),
                d["file"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

// ---------------------------------------------------------------------------
// OpenHands V1 event stores
// ---------------------------------------------------------------------------

#[test]
fn v1_conversation_folder_is_one_session() {
    let c = read(&[fx("openhands-v1")], false).unwrap();
    // Two folders, two sessions; their files are not read one by one.
    assert_eq!(c.files.len(), 2, "{:?}", c.files);
    assert!(c.files.iter().all(|f| f.format == "openhands-v1"));
    assert_eq!(c.files[0].unknown_records, 1); // FancyNewEvent
    let s = session(&c, "0a0b0c0d0e0f40718293a4b5c6d7e8f9");
    assert_eq!(
        types(s),
        vec![
            "session",
            "user",
            // resp-a: two calls of one response are one step
            "turn",
            "content",
            "tool_call",
            "tool_call",
            "tool_result",
            "tool_result",
            // resp-b: the agent error is a failed result
            "turn",
            "tool_call",
            "tool_result",
            // resp-c: the rejection is a result, not an error
            "turn",
            "tool_call",
            "tool_result",
            // the agent's closing message
            "turn",
            "thought",
            "content",
        ]
    );
    assert_eq!(s.turns, 4);
    assert_eq!(
        s.meta.model.as_deref(),
        Some("litellm_proxy/claude-sonnet-4-5")
    );
    assert_eq!(s.meta.meta["execution_status"], "finished");
    let results: Vec<(Option<&str>, Option<bool>)> = s
        .events
        .iter()
        .filter_map(|e| match &e.record {
            Record::ToolResult { output, error, .. } => Some((output.as_deref(), *error)),
            _ => None,
        })
        .collect();
    assert_eq!(
        results,
        vec![
            (Some("a b c"), Some(false)),
            (Some("/home/u/proj"), Some(false)),
            (Some("Path /nope does not exist"), Some(true)),
            (Some("not now"), Some(false)),
        ]
    );
    // Arguments come from the call's JSON text.
    let Record::ToolCall { name, args, id } = &s.events[4].record else {
        panic!("{:?}", s.events[4]);
    };
    assert_eq!((name.as_str(), id.as_deref()), ("terminal", Some("c1")));
    assert_eq!(Value::Object((**args).clone()), json!({"command": "ls"}));
    // Each record names its event file.
    let p = c.provenance(0, 5).unwrap();
    assert!(
        p.file
            .ends_with("events/event-00001-0a0b0001-0000-4000-8000-000000000001.json"),
        "{p}"
    );
    // The live agent's stuck verdict is kept as a loop_detected record.
    let stuck = session(&c, "5f1c0e7a9b2d4c6e8f0a1b2c3d4e5f60");
    assert!(matches!(
        &stuck.events.last().unwrap().record,
        Record::LoopDetected { kind: Some(k), .. } if k == "stuck"
    ));
}

#[test]
fn v1_event_folder_with_a_gap_is_an_error_naming_the_file_or_a_skip() {
    let e = read(&[fx("openhands-v1-gap")], false)
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("tests/fixtures/import/openhands-v1-gap/0a0b0c0d0e0f40718293a4b5c6d7e8f9/events/event-00004-"),
        "{e}"
    );
    assert!(
        e.ends_with(": event 00003 is missing (a gap before this file)"),
        "{e}"
    );
    let c = read(&[fx("openhands-v1-gap")], true).unwrap();
    assert_eq!(c.files[0].skipped_lines, 1);
    assert!(
        matches!(&c.skipped[0], looptune::event::Skip::Line { line: None, message, .. } if message.contains("event 00003 is missing")),
        "{:?}",
        c.skipped
    );
    // The rest of the conversation is read: one result fewer than whole.
    let whole = read(
        &[fx("openhands-v1/0a0b0c0d0e0f40718293a4b5c6d7e8f9")],
        false,
    )
    .unwrap();
    assert_eq!(
        c.sessions[0].events.len() + 1,
        whole.sessions[0].events.len()
    );
    // The command line: exit 2 and the file named.
    let (code, _, err) = stdout(&["replay", "tests/fixtures/import/openhands-v1-gap"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("event-00004-") && err.contains("gap"), "{err}");
}

#[test]
fn v1_folder_named_directly_and_base_state_errors() {
    // The conversation folder itself, given on the command line.
    let c = read(
        &[fx("openhands-v1/5f1c0e7a9b2d4c6e8f0a1b2c3d4e5f60")],
        false,
    )
    .unwrap();
    assert_eq!(c.sessions.len(), 1);
    assert_eq!(c.sessions[0].id, "5f1c0e7a9b2d4c6e8f0a1b2c3d4e5f60");
    // A damaged base state names its file and line.
    let d = tempfile::tempdir().unwrap();
    let conv = d.path().join("abc");
    std::fs::create_dir_all(conv.join("events")).unwrap();
    std::fs::write(conv.join("base_state.json"), "{\n  \"id\": \n").unwrap();
    let e = read(&[d.path().to_path_buf()], false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("abc/base_state.json:3: not JSON"), "{e}");
    // A damaged event: strict names the event file and line.
    std::fs::write(conv.join("base_state.json"), "{\"id\": \"abc\"}").unwrap();
    std::fs::write(
        conv.join("events/event-00000-e0.json"),
        "{\"kind\": \"MessageEvent\", \"source\": \"user\"",
    )
    .unwrap();
    let e = read(&[d.path().to_path_buf()], false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("events/event-00000-e0.json:1: not JSON"), "{e}");
    std::fs::write(
        conv.join("events/event-00000-e0.json"),
        "{\"source\": \"user\"}",
    )
    .unwrap();
    let e = read(&[d.path().to_path_buf()], false)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("event-00000-e0.json:1: missing field `kind`"),
        "{e}"
    );
}

#[test]
fn v1_profiles_check_once_per_step_as_the_sdk_run_loop() {
    let dir = "tests/fixtures/import/openhands-v1";
    let one = |extra: &[&str]| {
        let mut args = vec![
            "replay",
            "--format",
            "json",
            "--profile",
            "openhands-v1",
            dir,
        ];
        args.extend_from_slice(extra);
        let (code, out, err) = stdout(&args);
        assert_eq!(code, 0, "{err}");
        let line = out
            .lines()
            .find(|l| l.contains("5f1c0e7a9b2d4c6e8f0a1b2c3d4e5f60"))
            .unwrap()
            .to_string();
        detections(&line)
    };
    // Per step (the default): after the fifth step's observation (event 18),
    // when the loop would have checked before the next agent.step().
    let step = one(&[]);
    assert_eq!(step.len(), 1);
    assert_eq!((step[0].2, step[0].3), (5, 18));
    assert!(step[0].4.contains("event-00011-"), "{step:?}");
    // Per event (the old behaviour, kept as a parameter): at the fifth
    // action already, before the SDK would have looked.
    let event = one(&["--set", "check_at=event"]);
    assert_eq!((event[0].2, event[0].3), (5, 17));
}

// ---------------------------------------------------------------------------
// SQLite stores
// ---------------------------------------------------------------------------

/// OpenCode's tables as `packages/opencode/src/session/session.sql.ts` (and
/// `project.sql.ts`) declare them, with drizzle's column types.
const OPENCODE_SCHEMA: &str = r#"
CREATE TABLE project (id text PRIMARY KEY, worktree text NOT NULL, vcs text, name text,
  time_created integer NOT NULL, time_updated integer NOT NULL);
CREATE TABLE session (id text PRIMARY KEY, project_id text NOT NULL REFERENCES project(id) ON DELETE cascade,
  workspace_id text, parent_id text, slug text NOT NULL, directory text NOT NULL, path text,
  title text NOT NULL, version text NOT NULL, share_url text, summary_additions integer,
  summary_deletions integer, summary_files integer, summary_diffs text, cost real DEFAULT 0 NOT NULL,
  tokens_input integer DEFAULT 0 NOT NULL, tokens_output integer DEFAULT 0 NOT NULL,
  tokens_reasoning integer DEFAULT 0 NOT NULL, tokens_cache_read integer DEFAULT 0 NOT NULL,
  tokens_cache_write integer DEFAULT 0 NOT NULL, revert text, permission text, goal text, agent text,
  model text, time_created integer NOT NULL, time_updated integer NOT NULL, time_compacting integer,
  time_archived integer);
CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL REFERENCES session(id) ON DELETE cascade,
  time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
CREATE INDEX message_session_time_created_id_idx ON message (session_id, time_created, id);
CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL REFERENCES message(id) ON DELETE cascade,
  session_id text NOT NULL, time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
CREATE INDEX part_message_id_id_idx ON part (message_id, id);
CREATE TABLE session_message (id text PRIMARY KEY, session_id text NOT NULL REFERENCES session(id) ON DELETE cascade,
  type text NOT NULL, seq integer NOT NULL, time_created integer NOT NULL, time_updated integer NOT NULL,
  data text NOT NULL);
CREATE TABLE todo (session_id text NOT NULL, content text NOT NULL, status text NOT NULL,
  priority text NOT NULL, position integer NOT NULL, time_created integer NOT NULL,
  time_updated integer NOT NULL, PRIMARY KEY(session_id, position));
"#;

/// Goose's tables as `crates/goose/src/session/session_manager.rs` creates
/// them (schema version 9).
const GOOSE_SCHEMA: &str = r#"
CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP);
INSERT INTO schema_version (version) VALUES (9);
CREATE TABLE sessions (id TEXT PRIMARY KEY, name TEXT NOT NULL DEFAULT '', description TEXT NOT NULL DEFAULT '',
  user_set_name BOOLEAN DEFAULT FALSE, session_type TEXT NOT NULL DEFAULT 'user', working_dir TEXT NOT NULL,
  created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
  extension_data TEXT DEFAULT '{}', total_tokens INTEGER, input_tokens INTEGER, output_tokens INTEGER,
  accumulated_total_tokens INTEGER, accumulated_input_tokens INTEGER, accumulated_output_tokens INTEGER,
  schedule_id TEXT, recipe_json TEXT, user_recipe_values_json TEXT, provider_name TEXT,
  model_config_json TEXT, tenant_id TEXT, user_id TEXT);
CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, message_id TEXT,
  session_id TEXT NOT NULL REFERENCES sessions(id), role TEXT NOT NULL, content_json TEXT NOT NULL,
  created_timestamp INTEGER NOT NULL, timestamp TIMESTAMP DEFAULT CURRENT_TIMESTAMP, tokens INTEGER,
  metadata_json TEXT);
CREATE INDEX idx_messages_session ON messages(session_id);
"#;

/// An OpenCode database: session `ses_loop` (a user prompt, then one
/// assistant message of three steps each calling `read` the same way, the
/// doom loop's three, in three steps) and a subagent session `ses_child`.
fn opencode_db(path: &Path, wal: bool) -> Connection {
    let conn = Connection::open(path).unwrap();
    if wal {
        conn.pragma_update(None, "journal_mode", "WAL").unwrap();
    }
    conn.execute_batch(OPENCODE_SCHEMA).unwrap();
    conn.execute(
        "INSERT INTO project VALUES ('prj', '/w', 'git', NULL, 1, 1)",
        [],
    )
    .unwrap();
    for (id, parent, t) in [("ses_loop", None, 10), ("ses_child", Some("ses_loop"), 20)] {
        conn.execute(
            "INSERT INTO session (id, project_id, parent_id, slug, directory, title, version, time_created, time_updated)
             VALUES (?1, 'prj', ?2, 's', '/w', 'fix the port', '1.18.31', ?3, ?3)",
            rusqlite::params![id, parent, t],
        )
        .unwrap();
    }
    let msg = |id: &str, sid: &str, t: i64, data: Value| {
        conn.execute(
            "INSERT INTO message VALUES (?1, ?2, ?3, ?3, ?4)",
            rusqlite::params![id, sid, t, data.to_string()],
        )
        .unwrap();
    };
    let part = |id: &str, mid: &str, sid: &str, data: Value| {
        conn.execute(
            "INSERT INTO part VALUES (?1, ?2, ?3, 1, 1, ?4)",
            rusqlite::params![id, mid, sid, data.to_string()],
        )
        .unwrap();
    };
    msg(
        "msg_01",
        "ses_loop",
        100,
        json!({"role": "user", "time": {"created": 100}, "agent": "build",
               "model": {"providerID": "anthropic", "modelID": "claude-sonnet-4-5"}}),
    );
    part(
        "prt_01",
        "msg_01",
        "ses_loop",
        json!({"type": "text", "text": "fix the port"}),
    );
    part(
        "prt_02",
        "msg_01",
        "ses_loop",
        json!({"type": "text", "text": "<file>", "synthetic": true}),
    );
    msg(
        "msg_02",
        "ses_loop",
        200,
        json!({"role": "assistant", "time": {"created": 200, "completed": 300}, "parentID": "msg_01",
               "modelID": "claude-sonnet-4-5", "providerID": "anthropic", "mode": "build",
               "path": {"cwd": "/w", "root": "/w"}, "cost": 0,
               "tokens": {"input": 10, "output": 20, "reasoning": 0, "cache": {"read": 0, "write": 0}}}),
    );
    let mut n = 10;
    for step in 0..3 {
        let mut p = |data: Value| {
            n += 1;
            part(&format!("prt_{n}"), "msg_02", "ses_loop", data);
        };
        p(json!({"type": "step-start"}));
        if step == 0 {
            p(json!({"type": "text", "text": "Reading the config."}));
        }
        p(
            json!({"type": "tool", "tool": "read", "callID": format!("call_{step}"),
                 "state": {"status": "error", "input": {"filePath": "/w/app.toml"},
                           "error": "File not found: /w/app.toml", "time": {"start": 1, "end": 2}}}),
        );
        p(json!({"type": "step-finish", "reason": "tool-calls",
                 "tokens": {"input": 100, "output": 10, "reasoning": 0, "cache": {"read": 0, "write": 0}}}));
    }
    msg(
        "msg_03",
        "ses_child",
        400,
        json!({"role": "assistant", "time": {"created": 400}, "modelID": "claude-haiku-4-5", "providerID": "anthropic"}),
    );
    part(
        "prt_90",
        "msg_03",
        "ses_child",
        json!({"type": "text", "text": "done"}),
    );
    conn
}

/// A Goose database: one session with a shell call failing the same way
/// three times, then called a fourth time.
fn goose_db(path: &Path) -> Connection {
    let conn = Connection::open(path).unwrap();
    conn.execute_batch(GOOSE_SCHEMA).unwrap();
    conn.execute(
        "INSERT INTO sessions (id, name, working_dir, provider_name, model_config_json)
         VALUES ('20261002_1', 'fix tests', '/w', 'anthropic', ?1)",
        [json!({"model_name": "claude-sonnet-4-5", "context_limit": 200000}).to_string()],
    )
    .unwrap();
    let msg = |role: &str, t: i64, content: Value| {
        conn.execute(
            "INSERT INTO messages (message_id, session_id, role, content_json, created_timestamp)
             VALUES (?1, '20261002_1', ?2, ?3, ?4)",
            rusqlite::params![format!("m{t}"), role, content.to_string(), t],
        )
        .unwrap();
    };
    msg(
        "user",
        1,
        json!([{"type": "text", "text": "run the tests"}]),
    );
    for k in 0..4 {
        let id = format!("toolu_{k}");
        msg(
            "assistant",
            10 + k,
            json!([{"type": "toolRequest", "id": id,
                     "toolCall": {"status": "success", "value": {"name": "developer__shell",
                                  "arguments": {"command": "cargo test"}}}}]),
        );
        msg(
            "user",
            20 + k,
            json!([{"type": "toolResponse", "id": id,
                     "toolResult": {"status": "error", "error": "Execution failed: exit code 101"}}]),
        );
    }
    conn
}

#[test]
fn opencode_database_sessions_parts_and_provenance() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("opencode.db");
    drop(opencode_db(&db, false));
    let c = read(std::slice::from_ref(&db), false).unwrap();
    assert_eq!(c.files[0].format, "opencode");
    assert_eq!(c.sessions.len(), 2);
    let s = session(&c, "ses_loop");
    assert_eq!(
        types(s),
        vec![
            "session",
            "user",
            "turn",
            "content",
            "tool_call",
            "tool_result",
            "usage",
            "turn",
            "tool_call",
            "tool_result",
            "usage",
            "turn",
            "tool_call",
            "tool_result",
            "usage",
        ]
    );
    assert!(
        matches!(&s.events[1].record, Record::User { text, prompt_id }
        if text == "fix the port" && prompt_id.as_deref() == Some("msg_01"))
    );
    assert_eq!(s.meta.model.as_deref(), Some("claude-sonnet-4-5"));
    assert_eq!(s.meta.meta["title"], "fix the port");
    let child = session(&c, "ses_child");
    assert_eq!(child.meta.meta["parent_session"], "ses_loop");
    assert_eq!(c.files[0].unknown_records, 0);
    // Provenance: the database, the table and the row's id.
    let at = c.sessions.iter().position(|s| s.id == "ses_loop").unwrap();
    let p = c.provenance(at, 5).unwrap();
    assert_eq!(p.file, db.display().to_string());
    assert_eq!(p.pointer, Some("/part/prt_13"));
    let conn = Connection::open(&db).unwrap();
    let data: String = conn
        .query_row("SELECT data FROM part WHERE id = 'prt_13'", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert!(data.contains("\"tool\":\"read\""), "{data}");
    // Kilo Code's session-wide doom loop fires on the third identical call
    // (OpenCode's own looks inside one step, and these are three steps).
    let db_s = db.display().to_string();
    let (code, out, err) = stdout(&["replay", "--format", "json", "--profile", "kilo", &db_s]);
    assert_eq!(code, 0, "{err}");
    let line = out.lines().find(|l| l.contains("ses_loop")).unwrap();
    let dets = detections(line);
    assert_eq!(dets.len(), 1, "{line}");
    assert_eq!((dets[0].2, dets[0].3), (3, 13));
    assert!(line.contains("\"pointer\":\"/part/prt_19\""), "{line}");
}

/// A session whose history only the newer `session_message` table holds
/// (OpenCode V2: one row per message, an assistant's tool calls inside its
/// `content`) is read in order of `seq`, its places named by table and row;
/// a session kept in both layouts is read once, from `message`/`part`.
#[test]
fn opencode_projected_history_is_read() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("opencode.db");
    let conn = opencode_db(&db, false);
    conn.execute(
        "INSERT INTO session (id, project_id, slug, directory, title, version, time_created, time_updated)
         VALUES ('ses_new', 'prj', 's', '/w', 'new form', '2.0.0', 30, 30)",
        [],
    )
    .unwrap();
    let row = |id: &str, sid: &str, kind: &str, seq: i64, data: Value| {
        conn.execute(
            "INSERT INTO session_message VALUES (?1, ?2, ?3, ?4, 1, 1, ?5)",
            rusqlite::params![id, sid, kind, seq, data.to_string()],
        )
        .unwrap();
    };
    // Ids sort against `seq`: the order must come from `seq`.
    row(
        "msg_z1",
        "ses_new",
        "user",
        1,
        json!({"text": "fix the port", "time": {"created": 1}}),
    );
    row(
        "msg_y0",
        "ses_new",
        "model-switched",
        2,
        json!({"model": {"id": "m", "providerID": "p"}, "time": {"created": 2}}),
    );
    for k in 0..3 {
        let mut content = vec![
            json!({"type": "tool", "id": format!("t{k}"), "callID": format!("call_{k}"),
            "name": "read",
            "state": {"status": "error", "input": {"filePath": "/w/app.toml"},
                      "error": {"message": "File not found: /w/app.toml"}},
            "time": {"created": 3}}),
        ];
        if k == 0 {
            content.insert(
                0,
                json!({"type": "text", "id": "x", "text": "Reading the config."}),
            );
        }
        row(
            &format!("msg_a{k}"),
            "ses_new",
            "assistant",
            3 + k,
            json!({"agent": "build", "model": {"id": "claude-opus-4-5", "providerID": "anthropic"},
                   "content": content, "time": {"created": 3, "completed": 4}}),
        );
    }
    row(
        "msg_q",
        "ses_new",
        "mystery",
        9,
        json!({"time": {"created": 9}}),
    );
    // The same history in both layouts: `message`/`part` wins.
    row(
        "msg_dup",
        "ses_loop",
        "user",
        1,
        json!({"text": "fix the port", "time": {"created": 1}}),
    );
    drop(conn);
    let c = read(std::slice::from_ref(&db), false).unwrap();
    assert_eq!(c.files[0].unknown_records, 1, "the `mystery` row");
    let s = session(&c, "ses_new");
    assert_eq!(
        types(s),
        vec![
            "session",
            "user",
            "turn",
            "content",
            "tool_call",
            "tool_result",
            "turn",
            "tool_call",
            "tool_result",
            "turn",
            "tool_call",
            "tool_result",
        ]
    );
    assert!(
        matches!(&s.events[1].record, Record::User { text, prompt_id }
        if text == "fix the port" && prompt_id.as_deref() == Some("msg_z1"))
    );
    assert!(
        matches!(&s.events[4].record, Record::ToolCall { name, id, .. }
        if name == "read" && id.as_deref() == Some("call_0"))
    );
    assert!(
        matches!(&s.events[5].record, Record::ToolResult { output, error, .. }
        if output.as_deref() == Some("File not found: /w/app.toml") && *error == Some(true))
    );
    assert_eq!(s.meta.model.as_deref(), Some("claude-opus-4-5"));
    assert_eq!(session(&c, "ses_loop").events.len(), 15);
    let at = c.sessions.iter().position(|s| s.id == "ses_new").unwrap();
    let p = c.provenance(at, 4).unwrap();
    assert_eq!(p.file, db.display().to_string());
    assert_eq!(p.pointer, Some("/session_message/msg_a0"));
    // Kilo Code's doom loop fires on the third identical call, named by its row.
    let db_s = db.display().to_string();
    let (code, out, err) = stdout(&["replay", "--format", "json", "--profile", "kilo", &db_s]);
    assert_eq!(code, 0, "{err}");
    let line = out.lines().find(|l| l.contains("ses_new")).unwrap();
    let dets = detections(line);
    assert_eq!(dets.len(), 1, "{line}");
    assert_eq!((dets[0].2, dets[0].3), (3, 11));
    assert!(
        line.contains("\"pointer\":\"/session_message/msg_a2\""),
        "{line}"
    );
}

/// A bad `session_message` row is named by its table and row (strict) or
/// skipped (lenient).
#[test]
fn opencode_bad_projected_row_is_named_or_skipped() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("opencode.db");
    let conn = opencode_db(&db, false);
    conn.execute(
        "INSERT INTO session (id, project_id, slug, directory, title, version, time_created, time_updated)
         VALUES ('ses_new', 'prj', 's', '/w', 'new form', '2.0.0', 30, 30)",
        [],
    )
    .unwrap();
    conn.execute(
        "INSERT INTO session_message VALUES ('msg_bad', 'ses_new', 'user', 1, 1, 1, '{not json')",
        [],
    )
    .unwrap();
    drop(conn);
    let err = read(std::slice::from_ref(&db), false)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("table `session_message`, row msg_bad"),
        "{err}"
    );
    let c = read(std::slice::from_ref(&db), true).unwrap();
    assert_eq!(session(&c, "ses_new").events.len(), 1);
}

#[test]
fn goose_database_sessions_and_rows() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("sessions.db");
    drop(goose_db(&db));
    let c = read(std::slice::from_ref(&db), false).unwrap();
    assert_eq!(c.files[0].format, "goose");
    let s = session(&c, "20261002_1");
    assert_eq!(
        types(s),
        vec![
            "session",
            "user",
            "turn",
            "tool_call",
            "tool_result",
            "turn",
            "tool_call",
            "tool_result",
            "turn",
            "tool_call",
            "tool_result",
            "turn",
            "tool_call",
            "tool_result",
        ]
    );
    assert_eq!(s.meta.model.as_deref(), Some("claude-sonnet-4-5"));
    assert_eq!(s.meta.meta["working_dir"], "/w");
    let p = c.provenance(0, 4).unwrap();
    assert_eq!(p.pointer, Some("/messages/2"));
    // Goose's shipped rule: the same error three times, the fourth call denied.
    let db_s = db.display().to_string();
    let (code, out, err) = stdout(&["replay", "--format", "json", "--profile", "goose", &db_s]);
    assert_eq!(code, 0, "{err}");
    let dets = detections(out.trim());
    assert_eq!(dets.len(), 1, "{out}");
    assert_eq!((dets[0].2, dets[0].3), (4, 13));
    assert!(out.contains("\"pointer\":\"/messages/8\""), "{out}");
}

#[test]
fn databases_are_found_by_a_walk_and_bad_rows_are_named() {
    let d = tempfile::tempdir().unwrap();
    drop(opencode_db(&d.path().join("opencode.db"), false));
    std::fs::create_dir(d.path().join("sessions")).unwrap();
    drop(goose_db(&d.path().join("sessions/sessions.db")));
    // Another program's database is skipped with a note, not an error.
    let other = Connection::open(d.path().join("cache.db")).unwrap();
    other.execute_batch("CREATE TABLE kv (k, v)").unwrap();
    drop(other);
    let c = read(&[d.path().to_path_buf()], false).unwrap();
    assert_eq!(c.sessions.len(), 3);
    assert!(
        c.skipped
            .iter()
            .any(|n| matches!(n, looptune::event::Skip::Unrecognised { file, .. } if file.ends_with("cache.db"))),
        "{:?}",
        c.skipped
    );
    // A bad JSON row: strict names table and row, lenient skips it.
    let conn = Connection::open(d.path().join("opencode.db")).unwrap();
    conn.execute("UPDATE part SET data = '{broken' WHERE id = 'prt_13'", [])
        .unwrap();
    drop(conn);
    let db = d.path().join("opencode.db");
    let e = read(std::slice::from_ref(&db), false)
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with(&format!(
            "{}: table `part`, row prt_13: field `data` is not JSON",
            db.display()
        )),
        "{e}"
    );
    let c = read(&[db], true).unwrap();
    assert_eq!(c.files[0].skipped_lines, 1);
    assert_eq!(session(&c, "ses_loop").tool_calls(), 2);
}

#[test]
fn a_database_locked_by_a_writer_is_an_error_and_the_writer_is_not_disturbed() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("opencode.db");
    let writer = opencode_db(&db, false);
    // A rollback-journal database in the middle of a commit: the writer
    // holds the exclusive lock.
    writer.execute_batch("BEGIN EXCLUSIVE").unwrap();
    writer
        .execute(
            "UPDATE session SET title = 'renamed' WHERE id = 'ses_loop'",
            [],
        )
        .unwrap();
    let db_s = db.display().to_string();
    let (code, _, err) = stdout(&["replay", &db_s]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&format!("{db_s}: the database is locked by a writer")),
        "{err}"
    );
    // The writer goes on and commits as if nobody had looked.
    writer.execute_batch("COMMIT").unwrap();
    let c = read(std::slice::from_ref(&db), false).unwrap();
    assert_eq!(session(&c, "ses_loop").meta.meta["title"], "renamed");
    // Nothing was written beside the database by the reads.
    let names: Vec<String> = std::fs::read_dir(d.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["opencode.db".to_string()]);
}

#[test]
fn a_wal_database_is_read_while_a_writer_holds_a_transaction() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("opencode.db");
    let writer = opencode_db(&db, true);
    writer.execute_batch("BEGIN IMMEDIATE").unwrap();
    writer
        .execute(
            "UPDATE session SET title = 'uncommitted' WHERE id = 'ses_loop'",
            [],
        )
        .unwrap();
    let before = std::fs::read(&db).unwrap();
    // The reader sees the last commit and does not wait.
    let c = read(std::slice::from_ref(&db), false).unwrap();
    assert_eq!(session(&c, "ses_loop").meta.meta["title"], "fix the port");
    // The writer's transaction was never in the way of the read, nor the read in its way.
    writer.execute_batch("COMMIT").unwrap();
    assert_eq!(std::fs::read(&db).unwrap(), before);
    let c = read(&[db], false).unwrap();
    assert_eq!(session(&c, "ses_loop").meta.meta["title"], "uncommitted");
}

// ---------------------------------------------------------------------------
// Gemini CLI telemetry file
// ---------------------------------------------------------------------------

#[test]
fn telemetry_records_become_calls_and_live_detections() {
    let c = read(&[fx("gemini-telemetry.json")], false).unwrap();
    assert_eq!(c.files[0].format, "gemini-telemetry");
    assert_eq!(c.sessions.len(), 2);
    let s = session(&c, "s-telemetry-1");
    assert_eq!(s.turns, 5);
    assert_eq!(s.tool_calls(), 5);
    let live: Vec<(u32, &str)> = s
        .events
        .iter()
        .filter_map(|e| match &e.record {
            Record::LoopDetected { kind, .. } => Some((e.turn, kind.as_deref().unwrap())),
            _ => None,
        })
        .collect();
    assert_eq!(live, vec![(5, "consecutive_identical_tool_calls")]);
    let Record::ToolCall { name, args, .. } = &s.events[5].record else {
        panic!("{:?}", s.events[5]);
    };
    assert_eq!(name, "read_file");
    assert_eq!(args["absolute_path"], "/etc/app.toml");
    // The LLM check's verdict is kept as a judge record before the live detection.
    let s2 = session(&c, "s-telemetry-2");
    let n = s2.events.len();
    assert!(
        matches!(&s2.events[n - 2].record, Record::Judge { confidence, .. } if (*confidence - 0.93).abs() < 1e-9)
    );
    assert!(
        matches!(&s2.events[n - 1].record, Record::LoopDetected { kind: Some(k), .. } if k == "llm_detected_loop")
    );
}

/// Gemini CLI's docs name the telemetry outfile `.gemini/telemetry.log`: a
/// walk picks it up by its first bytes, and passes over every other `.log`
/// (plain text, telemetry only past the sniffed head, a dangling link, a
/// compressed one) without a note or an error.
#[test]
fn a_walk_picks_up_a_telemetry_log_by_its_first_bytes() {
    let d = tempfile::tempdir().unwrap();
    let gem = d.path().join("proj/.gemini");
    std::fs::create_dir_all(&gem).unwrap();
    let telemetry = std::fs::read(fx("gemini-telemetry.json")).unwrap();
    std::fs::write(gem.join("telemetry.log"), &telemetry).unwrap();
    std::fs::write(d.path().join("build.log"), "Compiling looptune\nFinished\n").unwrap();
    // Telemetry only after the first 64 KiB: not looked at.
    let mut late = vec![b'#'; 70 << 10];
    late.push(b'\n');
    late.extend_from_slice(&telemetry);
    std::fs::write(d.path().join("late.log"), late).unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(d.path().join("nowhere"), d.path().join("gone.log")).unwrap();
    let (code, out, err) = stdout(&["replay", "--format", "json", d.path().to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.lines().count(), 2, "{out}");
    assert!(out.contains("s-telemetry-1"), "{out}");
    assert!(out.contains("telemetry.log"), "{out}");
    for other in ["build.log", "late.log", "gone.log"] {
        assert!(!err.contains(other), "{other} noted: {err}");
    }
    let c = read(&[d.path().to_path_buf()], false).unwrap();
    assert_eq!(c.files.len(), 1);
    assert_eq!(c.files[0].format, "gemini-telemetry");
    assert!(c.files[0].path.ends_with("telemetry.log"));
}

#[test]
fn telemetry_bad_record_is_named_by_its_line_or_skipped() {
    let d = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(fx("gemini-telemetry.json")).unwrap();
    // Cut a record short in the middle of the file.
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.contains("\"function_name\": \"read_file\""))
        .unwrap();
    let mut broken: Vec<&str> = lines.clone();
    broken.remove(at + 1);
    broken[at] = "    \"function_name\": ";
    let f = d.path().join("telemetry.log");
    std::fs::write(&f, broken.join("\n")).unwrap();
    let e = read(std::slice::from_ref(&f), false)
        .unwrap_err()
        .to_string();
    assert!(e.starts_with(&format!("{}:", f.display())), "{e}");
    assert!(e.contains("not JSON"), "{e}");
    let c = read(&[f], true).unwrap();
    assert_eq!(c.files[0].skipped_lines, 1);
    assert_eq!(session(&c, "s-telemetry-1").tool_calls(), 4);
}

#[test]
fn replay_shows_live_detections_beside_the_port() {
    let f = "tests/fixtures/import/gemini-telemetry.json";
    let (code, out, err) = stdout(&["replay", "--format", "json", f]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // The live agent stopped session 1 at turn 5, where the port fires too.
    assert_eq!(lines[0]["detections"][0]["turn"], 5);
    assert_eq!(
        lines[0]["live"],
        json!([{"kind": "consecutive_identical_tool_calls", "turn": 5, "event": 28,
                "file": f, "line": 637, "same_turn": ["gemini-latest"]}])
    );
    // The LLM check's detection in session 2 is not reproduced.
    assert_eq!(lines[1]["live"][0]["kind"], "llm_detected_loop");
    assert_eq!(lines[1]["live"][0]["same_turn"], json!([]));
    let (_, table, _) = stdout(&["replay", f]);
    assert!(
        table.contains("consecutive_identical_tool_calls  5     tests/fixtures/import/gemini-telemetry.json:637  tool_call turn 5 (same turn)"),
        "{table}"
    );
    assert!(
        table.contains("reproduced at the same turn: gemini-latest 1 of 2"),
        "{table}"
    );
    // Sessions without live detections print nothing more.
    let (_, plain, _) = stdout(&["replay", "fixtures/sessions"]);
    assert!(!plain.contains("live detections"), "{plain}");
}

#[test]
fn sweep_counts_live_detections_the_stock_profile_reproduces() {
    let d = tempfile::tempdir().unwrap();
    let out_dir = d.path().join("out");
    let (code, out, err) = stdout(&[
        "sweep",
        "tests/fixtures/import/gemini-telemetry.json",
        "--out",
        out_dir.to_str().unwrap(),
        "--quiet",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("live detections: the agent's own detector fired in 2 sessions (first `loop_detected` record); the baseline gemini-latest reproduces 1 of them at the same turn"),
        "{out}"
    );
    // The live turn is kept in summary.json, so a merge or diff still has it.
    let summary = std::fs::read_to_string(out_dir.join("summary.json")).unwrap();
    assert!(summary.contains("\"live_turn\":5"), "no live turn");
    // The report says the same, in the recommendation section, and
    // `looptune report DIR` draws it again from summary.json.
    let html = std::fs::read_to_string(out_dir.join("report.html")).unwrap();
    assert!(
        html.contains("<h3 id=\"live\">Live detections</h3>"),
        "no live section"
    );
    assert!(
        html.contains("The agent's own detector fired in 2 sessions"),
        "no live count"
    );
    assert!(
        html.contains("The baseline <b>gemini-latest</b> reproduces 1 of them at the same turn"),
        "no baseline count"
    );
    assert!(html.contains("<td class=\"n\">1 of 2</td>"), "no table row");
    let at = html.find("id=\"live\"").unwrap();
    assert!(
        html.find("id=\"recommendation\"").unwrap() < at,
        "live detections belong to the recommendation"
    );
    let (code, _, err) = stdout(&["report", out_dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let again = std::fs::read_to_string(out_dir.join("report.html")).unwrap();
    assert_eq!(html, again, "report DIR draws the same page");
    // A run with --baseline another stock profile counts for that one.
    let (_, out, _) = stdout(&[
        "sweep",
        "tests/fixtures/import/gemini-telemetry.json",
        "--out",
        out_dir.to_str().unwrap(),
        "--quiet",
        "--baseline",
        "gemini-2025-07",
    ]);
    assert!(
        out.contains("the baseline gemini-2025-07 reproduces"),
        "{out}"
    );
}
