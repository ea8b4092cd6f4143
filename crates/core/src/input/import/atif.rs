//! Harbor's Agent Trajectory Interchange Format (`trajectory.json`, schema
//! `ATIF-v1.0` to `ATIF-v1.8`; Harbor's `models/trajectories/*.py`, the RFC
//! `docs/rfcs/0001-trajectory-format.md`), which Harbor writes for some 35
//! agents under `jobs/<job>/<trial>/agent/`.
//!
//! One session per trajectory, id its `trajectory_id`, else `session_id`,
//! else the file stem. One turn per `agent` step: its `reasoning_content` as
//! thought, `message` as content, `tool_calls` as calls, and the results in
//! its `observation` as results (ATIF has no error flag: unknown), its
//! `metrics` as usage; `user` steps are prompts; `system` steps nothing (one
//! with `extra.context_management` is a compaction, counted in the session's
//! `compactions`). Steps with `is_copied_context: true` (context replayed
//! after a summary) are skipped. `trajectory.cont-N.json` continues its
//! session: it is read as part N, merged after the parent whatever the order
//! of paths (a continuation whose parent is missing reads on its own). A
//! parent's `continued_trajectory_ref` names its continuation file, which
//! then joins the parent's session whatever ids it gives; without one, a
//! continuation joins the trajectory of its folder with the same id.
//! Trajectories from other folders that give the same id stay apart (the
//! corpus tells them apart by folder, as other formats' clashing ids), unless
//! they are copies: every record is keyed by the file's content digest and
//! its place, so a copied job folder is read once.
//! Embedded `subagent_trajectories` are sessions of their own, named
//! `PARENT/ID` with `parent` in their metadata. `agent.name` and
//! `model_name` are recorded for grouping.

use super::common::{
    args_from_value, pointer, s, session_rec, text_of, value_lines, Ctx, Out, Seg,
};
use crate::error::Result;
use crate::event::Record;
use crate::input::format::FileSessions;
use crate::input::json::{FieldError, RecordError};
use serde_json::{Map, Value};
use std::collections::HashMap;

/// Whether a document is an ATIF trajectory.
fn sniff_doc(v: &Value) -> bool {
    v.as_object().is_some_and(|m| {
        s(m, "schema_version").is_some_and(|v| v.starts_with("ATIF-"))
            && m.get("steps").is_some_and(Value::is_array)
    })
}

/// The continuation number of `trajectory.cont-N` (the file stem), if any.
fn part_of(stem: &str) -> u32 {
    stem.rsplit_once(".cont-")
        .and_then(|(_, n)| n.parse().ok())
        .unwrap_or(0)
}

/// Message text: a string, or the text of its content parts (v1.6).
fn message_text(v: Option<&Value>) -> String {
    text_of(v)
}

/// Read one trajectory (at JSON pointer `base`) as session `sid`, then its
/// embedded subagents.
fn trajectory(
    out: &mut Out,
    t: &Map<String, Value>,
    sid: &str,
    base: &[String],
    parent: Option<&str>,
    lines: &HashMap<Vec<usize>, u32>,
    part: u32,
) -> std::result::Result<(), RecordError> {
    let agent = t.get("agent").and_then(Value::as_object);
    let mut meta = Map::new();
    if let Some(a) = agent {
        for (k, name) in [("name", "agent_name"), ("version", "agent_version")] {
            if let Some(v) = a.get(k).filter(|v| !v.is_null()) {
                meta.insert(name.to_string(), v.clone());
            }
        }
    }
    for k in ["schema_version", "session_id", "trajectory_id"] {
        if let Some(v) = t.get(k).filter(|v| !v.is_null()) {
            meta.insert(k.to_string(), v.clone());
        }
    }
    if let Some(p) = parent {
        meta.insert("parent".into(), Value::String(p.to_string()));
    }
    if part > 0 {
        meta.insert("continuation".into(), Value::from(part));
    }
    let model = agent.and_then(|a| s(a, "model_name")).map(str::to_string);
    out.at(Some(pointer(base)));
    out.push(sid, session_rec("atif", model, meta), 0);
    let Some(steps) = t.get("steps").and_then(Value::as_array) else {
        return Err(FieldError::MissingA {
            field: "steps".into(),
            what: "an array",
        }
        .into());
    };
    let mut names: HashMap<String, String> = HashMap::new();
    let mut compactions = 0u64;
    for (j, step) in steps.iter().enumerate() {
        let Some(step) = step.as_object() else {
            return Err(FieldError::ty(&format!("steps[{j}]"), "an object").into());
        };
        if step.get("is_copied_context").and_then(Value::as_bool) == Some(true) {
            continue;
        }
        let mut toks = base.to_vec();
        toks.extend(["steps".to_string(), j.to_string()]);
        out.at(Some(pointer(&toks)));
        // Lines are known for the steps of the top trajectory and of its
        // subagents (keyed `[step]` and `[subagent, step]`).
        let key: Option<Vec<usize>> = match base {
            [] => Some(vec![j]),
            [_, i] => i.parse().ok().map(|i| vec![i, j]),
            _ => None,
        };
        let line = key.and_then(|k| lines.get(&k)).copied().unwrap_or(0);
        match s(step, "source") {
            Some("system") => {
                let ctxm = step
                    .get("extra")
                    .and_then(|e| e.get("context_management"))
                    .is_some_and(|v| !v.is_null());
                if ctxm {
                    compactions += 1;
                    out.meta(sid, "compactions", Value::from(compactions));
                }
            }
            Some("user") => out.push(
                sid,
                Record::User {
                    text: message_text(step.get("message")),
                    prompt_id: None,
                },
                line,
            ),
            Some("agent") => {
                out.push(sid, Record::Turn, line);
                if let Some(r) = s(step, "reasoning_content").filter(|r| !r.is_empty()) {
                    out.push(
                        sid,
                        Record::Thought {
                            text: r.to_string(),
                        },
                        line,
                    );
                }
                let text = message_text(step.get("message"));
                if !text.is_empty() {
                    out.push(sid, Record::Content { text }, line);
                }
                let calls = match step.get("tool_calls") {
                    None | Some(Value::Null) => &[][..],
                    Some(Value::Array(a)) => a.as_slice(),
                    Some(_) => {
                        return Err(
                            FieldError::ty(&format!("steps[{j}].tool_calls"), "an array").into(),
                        )
                    }
                };
                for (k, c) in calls.iter().enumerate() {
                    let Some(name) = c.get("function_name").and_then(Value::as_str) else {
                        return Err(FieldError::Missing(format!(
                            "steps[{j}].tool_calls[{k}].function_name"
                        ))
                        .into());
                    };
                    let id = c
                        .get("tool_call_id")
                        .and_then(Value::as_str)
                        .map(str::to_string);
                    if let Some(id) = &id {
                        names.insert(id.clone(), name.to_string());
                    }
                    out.push(
                        sid,
                        Record::ToolCall {
                            name: name.to_string(),
                            args: args_from_value(c.get("arguments")).into(),
                            id,
                        },
                        line,
                    );
                }
                let results = step
                    .get("observation")
                    .and_then(|o| o.get("results"))
                    .and_then(Value::as_array);
                for r in results.into_iter().flatten() {
                    let id = r
                        .get("source_call_id")
                        .and_then(Value::as_str)
                        .map(str::to_string);
                    out.push(
                        sid,
                        Record::ToolResult {
                            name: id.as_ref().and_then(|i| names.get(i)).cloned(),
                            id,
                            output: Some(message_text(r.get("content"))),
                            error: None,
                        },
                        line,
                    );
                }
                if let Some(m) = step.get("metrics").and_then(Value::as_object) {
                    let input = m.get("prompt_tokens").and_then(Value::as_u64);
                    let output = m.get("completion_tokens").and_then(Value::as_u64);
                    if input.is_some() || output.is_some() {
                        out.push(
                            sid,
                            Record::Usage {
                                input_tokens: input,
                                output_tokens: output,
                            },
                            line,
                        );
                    }
                }
            }
            Some(other) => {
                return Err(FieldError::Unknown {
                    field: format!("steps[{j}].source"),
                    what: "source",
                    value: other.to_string(),
                }
                .into())
            }
            None => return Err(FieldError::Missing(format!("steps[{j}].source")).into()),
        }
    }
    let subs = t.get("subagent_trajectories").and_then(Value::as_array);
    for (i, sub) in subs.into_iter().flatten().enumerate() {
        let Some(sub) = sub.as_object() else {
            return Err(FieldError::ty(&format!("subagent_trajectories[{i}]"), "an object").into());
        };
        let own = s(sub, "trajectory_id")
            .or_else(|| s(sub, "session_id"))
            .map_or_else(|| i.to_string(), str::to_string);
        let child = format!("{sid}/{own}");
        let mut toks = base.to_vec();
        toks.extend(["subagent_trajectories".to_string(), i.to_string()]);
        trajectory(out, sub, &child, &toks, Some(sid), lines, 0)?;
    }
    Ok(())
}

/// Read a trajectory file.
fn read(ctx: &Ctx) -> Result<FileSessions> {
    let mut out = Out::new("atif");
    let Some(doc) = super::common::doc_or_skip(ctx, &mut out)? else {
        return Ok(out.finish());
    };
    let Some(t) = doc.as_object() else {
        return Err(ctx.file_err("an ATIF trajectory must be an object"));
    };
    let part = part_of(ctx.stem);
    // Without ids, a continuation's stem less its `.cont-N` is its parent's.
    let stem = match part {
        0 => ctx.stem,
        _ => ctx
            .stem
            .rsplit_once(".cont-")
            .map_or(ctx.stem, |(base, _)| base),
    };
    let sid = s(t, "trajectory_id")
        .or_else(|| s(t, "session_id"))
        .unwrap_or(stem)
        .to_string();
    let mut lines: HashMap<Vec<usize>, u32> =
        value_lines(ctx.bytes, &[Seg::Key("steps"), Seg::Index]);
    lines.extend(value_lines(
        ctx.bytes,
        &[
            Seg::Key("subagent_trajectories"),
            Seg::Index,
            Seg::Key("steps"),
            Seg::Index,
        ],
    ));
    if let Err(why) = trajectory(&mut out, t, &sid, &[], None, &lines, part) {
        out.bad(ctx, 1, why)?;
    }
    let mut fs = out.finish();
    fs.part = part;
    fs.continued_by = s(t, "continued_trajectory_ref").map(str::to_string);
    key_by_content(&mut fs, ctx.bytes);
    Ok(fs)
}

/// Key every record by the file's content digest and its place (session,
/// index): two files give equal keys only when they are the same bytes (a
/// copy), so copies are read once and other trajectories sharing an id stay
/// apart. A continuation's session record is keyed as its parent's when the
/// corpus joins them.
fn key_by_content(fs: &mut FileSessions, bytes: &[u8]) {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(bytes);
    let h = crate::util::number::hex(&digest[..16]);
    fs.record_keys = fs
        .sessions
        .iter()
        .map(|(sid, records)| {
            let keys = (0..records.len())
                .map(|k| Some(format!("atif:{h}:{sid}:{k}")))
                .collect();
            (sid.clone(), keys)
        })
        .collect();
}

/// Harbor ATIF trajectories.
pub(crate) struct Atif;

impl crate::input::format::Format for Atif {
    fn name(&self) -> &'static str {
        "atif"
    }
    fn aliases(&self) -> &'static [&'static str] {
        &["harbor"]
    }
    fn expected(&self) -> &'static str {
        "a Harbor ATIF trajectory: an object with `schema_version` `ATIF-v1.x` and `steps`"
    }
    fn extensions(&self) -> &'static [&'static str] {
        &[".json"]
    }
    fn sniff_doc(&self, doc: &Value) -> bool {
        sniff_doc(doc)
    }
    fn read(&self, ctx: &Ctx) -> Result<FileSessions> {
        read(ctx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continuation_parts_from_the_stem() {
        assert_eq!(part_of("trajectory"), 0);
        assert_eq!(part_of("trajectory.cont-1"), 1);
        assert_eq!(part_of("trajectory.cont-12"), 12);
        assert_eq!(part_of("trajectory.cont-x"), 0);
    }
}
