//! Throughput of looptune on a generated corpus (seeded, `looptune::input::synth`):
//! parsing, one configuration's replay on one core, a 1,000-configuration grid
//! on one core, and SHA-256 over the same bytes as the yardstick.
//!
//! `cargo bench --bench replay` (about 5 minutes). Corpus size:
//! `LOOPTUNE_BENCH_SESSIONS` (default 10,000) x `LOOPTUNE_BENCH_BYTES` (default
//! 11,000 bytes per session, about 140 MB in all). Figures and the method are
//! in benches/README.md.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use looptune::detect::DetectorConfig;
use looptune::input::{read_corpus, ReadOptions};
use looptune::progress::NoProgress;
use looptune::replay::{replay, ReplayOptions, Workers};
use looptune::sweep::grid::parse_grid;
use sha2::{Digest, Sha256};
use std::time::Duration;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// 10 x 10 x 10 = 1,000 configurations over the three gemini checks.
const GRID_1000: &str = r#"
family = "gemini"
profile = "gemini-latest"
stock_profiles = false
[axes]
tool_call_threshold = { start = 2, stop = 11, step = 1 }
content_loop_threshold = { start = 5, stop = 14, step = 1 }
llm_check_after_turns = { start = 10, stop = 100, step = 10 }
"#;

fn benches(c: &mut Criterion) {
    let sessions = env("LOOPTUNE_BENCH_SESSIONS", 10_000);
    let bytes_per = env("LOOPTUNE_BENCH_BYTES", 11_000);
    let dir = tempfile::tempdir().expect("temp dir");
    let total = looptune::input::synth::write_corpus(dir.path(), sessions, bytes_per, 1)
        .expect("corpus written");
    let paths = vec![dir.path().to_path_buf()];
    let corpus = read_corpus(&paths, &ReadOptions::default()).expect("corpus parses");
    let events = corpus.events() as u64;
    eprintln!(
        "corpus: {} sessions, {} events, {:.1} MB",
        corpus.sessions.len(),
        events,
        total as f64 / 1e6
    );

    let mut g = c.benchmark_group("corpus");
    g.sample_size(10).measurement_time(Duration::from_secs(20));
    g.throughput(Throughput::Bytes(total));
    g.bench_function("parse", |b| {
        b.iter(|| read_corpus(&paths, &ReadOptions::default()).expect("parses"))
    });
    let mut all = Vec::with_capacity(total as usize);
    for e in std::fs::read_dir(dir.path()).expect("listable") {
        all.extend(std::fs::read(e.expect("entry").path()).expect("readable"));
    }
    g.bench_function("sha256", |b| b.iter(|| Sha256::digest(&all)));
    let one = vec![DetectorConfig::resolve(None, Some("gemini-latest"), &[]).expect("profile")];
    let opts = ReplayOptions { all: false };
    let workers = Workers::new(1).expect("one thread");
    g.bench_function("replay_one_config", |b| {
        b.iter(|| replay(&corpus, one.clone(), &opts, &workers, &NoProgress).expect("replays"))
    });
    g.throughput(Throughput::Elements(events));
    g.bench_function("replay_one_config_events", |b| {
        b.iter(|| replay(&corpus, one.clone(), &opts, &workers, &NoProgress).expect("replays"))
    });
    let grid = parse_grid(GRID_1000, "bench").expect("grid");
    assert_eq!(grid.variants.len(), 1000);
    let configs: Vec<DetectorConfig> = grid.variants.iter().map(|v| v.config.clone()).collect();
    g.throughput(Throughput::Bytes(total));
    g.sample_size(10).measurement_time(Duration::from_secs(60));
    g.bench_function("replay_grid_1000", |b| {
        b.iter(|| replay(&corpus, configs.clone(), &opts, &workers, &NoProgress).expect("replays"))
    });
    g.finish();
}

criterion_group!(replay_benches, benches);
criterion_main!(replay_benches);
