//! The live Detector (issue 44): one session of 100,000 canonical records
//! fed record by record, for every profile fed incrementally; prints
//! records/s. `cargo bench --bench detector` (`LOOPTUNE_BENCH_RECORDS`
//! changes the length, `LOOPTUNE_BENCH_PROFILES=a,b` times those alone).
//! A profile not incremental would replay the session so far at every
//! record (quadratic): it is listed, not timed.

use looptune::detect::DetectorConfig;
use looptune::watch::{incremental_profiles, Detector};
use std::time::Instant;

/// A session of `n` records: turns of a call, a result and some text, with
/// a run of identical calls every so often (so rules fire). A result's id
/// is not its call's (each line numbers its own): calls stay unanswered for
/// the whole session, the worst case of the rules that match results to
/// calls.
fn session(n: usize) -> Vec<String> {
    let mut lines = vec![r#"{"type":"user","text":"fix the build","session":"b"}"#.to_string()];
    let mut k = 0usize;
    while lines.len() < n {
        k += 1;
        let file = if k % 50 < 8 { 0 } else { k % 997 };
        let line = match lines.len() % 4 {
            0 => r#"{"type":"turn","session":"b"}"#.to_string(),
            1 => format!(
                r#"{{"type":"tool_call","name":"read_file","args":{{"path":"src/f{file}.rs"}},"id":"c{k}","session":"b"}}"#
            ),
            2 => format!(
                r#"{{"type":"tool_result","name":"read_file","id":"c{k}","output":"fn f{file}() {{}}","session":"b"}}"#
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
    let lines = session(n);
    let inc = incremental_profiles();
    let only = std::env::var("LOOPTUNE_BENCH_PROFILES").ok();
    let chosen = |p: &str| only.as_deref().is_none_or(|o| o.split(',').any(|q| q == p));
    for p in inc.iter().filter(|p| chosen(p)) {
        let cfg = DetectorConfig::resolve(None, Some(p), &[]).expect("stock profile");
        let mut best = f64::MAX;
        let mut hits = 0;
        for _ in 0..3 {
            let mut det = Detector::new(cfg.clone()).expect("builds");
            let t = Instant::now();
            hits = 0;
            for l in &lines {
                hits += det.feed_line(l).expect("parses").len();
            }
            best = best.min(t.elapsed().as_secs_f64());
        }
        println!(
            "{p:24} {n} records fed in {:.3} s: {:.2} M records/s ({hits} hits)",
            best,
            n as f64 / best / 1e6
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
