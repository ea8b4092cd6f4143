//! `looptune guard`.

use super::args::profile_names;
use crate::detect::{Policy, Selection, Setting};
use crate::error::{Error, Result};
use crate::guard::{Agent, Guard, HookCall, Verdict};
use clap::builder::PossibleValuesParser;
use clap::Args;
use std::io::{Read, Write};
use std::path::PathBuf;

pub(super) const GUARD_HELP: &str = "\
Run by an agent's pre-tool hook: reads the hook's JSON on stdin (the
transcript's path, the pending tool call), replays the transcript with the
call through the configuration, and blocks the call where the rule fires.

Examples (in the agent's settings; see README \"Live guard\"):
  looptune guard --agent claude-code --profile looptune-default
  looptune guard --agent claude-code --config tuned.toml --policy warn:2
  looptune guard --agent gemini-cli --profile gemini-latest --set tool_call_threshold=4

Policy (--policy, else the configuration's own): stop blocks at the first
detection at the pending call; warn:N lets N detections of a prompt through
with a warning (Claude Code: context the model reads; Gemini CLI: a message
to the user) and blocks the next; ask hands the call to the user (Claude
Code; Gemini CLI blocks); ignore never blocks.

Exit codes (as the hooks read them):
  0  the call runs (a warning or `ask` is JSON on stdout)
  1  the guard could not decide (bad hook input, unreadable transcript, bad
     configuration): said on stderr, and the call runs (a non-blocking error)
  2  the call is blocked: stderr says why, for the model to read";

#[derive(Debug, Args)]
pub(super) struct GuardArgs {
    /// The agent whose hook runs the guard.
    #[arg(long, value_name = "AGENT", value_parser = PossibleValuesParser::new(["claude-code", "gemini-cli"]))]
    pub(super) agent: String,
    /// A named profile...
    #[arg(long, value_name = "NAME", value_parser = profile_names(), required_unless_present = "config", conflicts_with = "config")]
    pub(super) profile: Option<String>,
    /// ...with parameters overridden (KEY=VALUE).
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = crate::detect::Setting::parse, requires = "profile")]
    pub(super) sets: Vec<Setting>,
    /// Or a configuration file written by `looptune export --for looptune`.
    #[arg(long, value_name = "FILE.toml")]
    pub(super) config: Option<PathBuf>,
    /// What a detection does (default: the configuration's `policy`).
    #[arg(long, value_name = "POLICY", value_parser = Policy::parse)]
    pub(super) policy: Option<Policy>,
}

/// Most bytes of hook input read: a hook's JSON is small; a runaway stdin
/// must not hold the agent.
const MAX_HOOK_INPUT: u64 = 64 << 20;

/// Run `looptune guard`: hook JSON from `input`, the verdict as the agent's
/// hook reads it (JSON on `out`, a block's reason on `err`), the exit code.
pub(super) fn guard_command(
    args: &GuardArgs,
    input: &mut dyn Read,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<i32> {
    let agent = Agent::parse(&args.agent).expect("clap checks --agent");
    match decide(args, input) {
        Ok(v) => respond(agent, v, out, err),
        Err(e) => {
            // A hook's exit 2 would block the call: a guard that cannot
            // decide lets it run and says why.
            writeln!(err, "looptune guard: error: {e}").ok();
            Ok(1)
        }
    }
}

fn decide(args: &GuardArgs, input: &mut dyn Read) -> Result<Verdict> {
    let cfg = match &args.config {
        Some(path) => crate::export::config_file::load(path)?,
        None => Selection {
            families: Vec::new(),
            profiles: args.profile.iter().cloned().collect(),
            sets: args.sets.clone(),
        }
        .resolve()?
        .remove(0),
    };
    let guard = Guard::new(cfg, args.policy)?;
    let mut text = String::new();
    input
        .take(MAX_HOOK_INPUT)
        .read_to_string(&mut text)
        .map_err(|e| Error::io("<stdin>", e))?;
    let call = HookCall::parse(&text).map_err(|e| Error::Usage(e.to_string()))?;
    guard.check(&call)
}

fn respond(agent: Agent, v: Verdict, out: &mut dyn Write, err: &mut dyn Write) -> Result<i32> {
    let io = |e| Error::io("<stdout>", e);
    let json = |v: serde_json::Value, out: &mut dyn Write| -> Result<i32> {
        writeln!(out, "{v}").map_err(io)?;
        Ok(0)
    };
    match (v, agent) {
        (Verdict::Allow, _) => Ok(0),
        (Verdict::Warn(m), Agent::ClaudeCode) => json(
            serde_json::json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": m}}),
            out,
        ),
        (Verdict::Warn(m), Agent::GeminiCli) => json(serde_json::json!({"systemMessage": m}), out),
        (Verdict::Ask(m), Agent::ClaudeCode) => json(
            serde_json::json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask", "permissionDecisionReason": m}}),
            out,
        ),
        (Verdict::Ask(m), Agent::GeminiCli) | (Verdict::Block(m), _) => {
            writeln!(err, "{m}").ok();
            Ok(2)
        }
    }
}
