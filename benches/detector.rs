//! The live Detector (issue 44): one session of 100,000 canonical records
//! fed record by record, for every profile fed incrementally; prints
//! records/s. `cargo bench --bench detector` (`LOOPTUNE_BENCH_RECORDS`
//! changes the length, `LOOPTUNE_BENCH_PROFILES=a,b` times those alone,
//! `LOOPTUNE_BENCH_UNANSWERED=1` feeds the worst case below).
//! A profile not incremental would replay the session so far at every
//! record (quadratic): it is listed, not timed.

// The allocator `looptune watch`, `looptune guard` and the Python module
// ship with: what a fed record costs in them.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use looptune::detect::DetectorConfig;
use looptune::watch::{incremental_profiles, Detector};
use std::time::Instant;

/// A session of `n` records: turns of a call, its result and some text,
/// with a run of eight identical calls every fifty turns (so rules fire). With
/// `unanswered`, a result's id is not its call's: calls stay waiting for
/// the whole session, the worst case of the rules that match results to
/// calls (no agent writes that; a crashed tool might leave a few).
fn session(n: usize, unanswered: bool) -> Vec<String> {
    let mut lines = vec![r#"{"type":"user","text":"fix the build","session":"b"}"#.to_string()];
    let mut k = 0usize;
    while lines.len() < n {
        if lines.len() % 4 == 0 {
            k += 1;
        }
        let file = if k % 50 < 8 { 0 } else { k % 997 };
        let line = match lines.len() % 4 {
            0 => r#"{"type":"turn","session":"b"}"#.to_string(),
            1 => format!(
                r#"{{"type":"tool_call","name":"read_file","args":{{"path":"src/f{file}.rs"}},"id":"c{k}","session":"b"}}"#
            ),
            2 => format!(
                r#"{{"type":"tool_result","name":"read_file","id":"{}{k}","output":"fn f{file}() {{}}","session":"b"}}"#,
                if unanswered { "r" } else { "c" }
            ),
            _ => format!(r#"{{"type":"content","text":"Reading file {file} now.","session":"b"}}"#),
        };
        lines.push(line);
    }
    lines
}

fn main() {
    let n: usize = std::env::var("LOOPTUNE_BENCH_RECORDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let unanswered = std::env::var("LOOPTUNE_BENCH_UNANSWERED").is_ok_and(|v| v == "1");
    let lines = session(n, unanswered);
    let inc = incremental_profiles();
    let only = std::env::var("LOOPTUNE_BENCH_PROFILES").ok();
    let chosen = |p: &str| only.as_deref().is_none_or(|o| o.split(',').any(|q| q == p));
    for p in inc.iter().filter(|p| chosen(p)) {
        let cfg = DetectorConfig::resolve(None, Some(p), &[]).expect("stock profile");
        let (mut best, mut best_cpu) = (f64::MAX, f64::MAX);
        let (mut hits, mut held) = (0, 0);
        for _ in 0..3 {
            let mut det = Detector::new(cfg.clone()).expect("builds");
            let (t, c) = (Instant::now(), cpu_seconds());
            hits = 0;
            for l in &lines {
                hits += det.feed_line(l).expect("parses").len();
            }
            best = best.min(t.elapsed().as_secs_f64());
            best_cpu = best_cpu.min(cpu_seconds() - c);
            held = det.records_held();
        }
        // Records held at the end: the rules' windows, or every record
        // where a rule reads the session's model or mode.
        println!(
            "{p:24} {n} records fed in {best:.3} s: {:.2} M records/s, {:.2} M a CPU second ({hits} hits, {held} records held)",
            n as f64 / best / 1e6,
            n as f64 / best_cpu / 1e6
        );
    }
    let all: Vec<&str> = looptune::detect::families()
        .into_iter()
        .flat_map(|f| f.profiles().into_iter().map(|p| p.name))
        .filter(|p| !inc.contains(p))
        .collect();
    if !all.is_empty() {
        println!(
            "not incremental (replay the session so far): {}",
            all.join(" ")
        );
    }
}

/// This thread's CPU time: on a shared host the wall clock also counts the
/// time other processes held the core, so both rates are printed.
fn cpu_seconds() -> f64 {
    #[cfg(unix)]
    {
        let mut t = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes the timespec it is given.
        if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) } == 0 {
            return t.tv_sec as f64 + t.tv_nsec as f64 / 1e9;
        }
    }
    f64::NAN
}
