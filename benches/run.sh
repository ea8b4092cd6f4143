#!/usr/bin/env bash
# Whole-binary figures on a generated corpus: end-to-end replay on one core,
# peak memory, a 1,000-configuration sweep, and sha256sum over the same bytes.
# Usage: benches/run.sh [SESSIONS] [BYTES_PER_SESSION]   (defaults 10000 11000)
set -euo pipefail
cd "$(dirname "$0")/.."
n="${1:-10000}"; bytes="${2:-11000}"
corpus="${BENCH_CORPUS:-bench-corpus}"
cargo build --release -q
bin=target/release/looptune
rm -rf "$corpus"
"$bin" synth --out "$corpus" --sessions "$n" --bytes "$bytes" --seed 1
size=$(cat "$corpus"/*.jsonl | wc -c)
cat "$corpus"/*.jsonl > /dev/null   # warm the page cache
calc() { awk "BEGIN { print $* }"; }
secs() { /usr/bin/time -f "%e %M" "$@" 2>&1 >/dev/null | tail -1; }
read sha _ < <(secs sha256sum "$corpus"/*.jsonl)
read one one_kb < <(secs "$bin" replay "$corpus" --jobs 1 --quiet --format json)
read base base_kb < <(secs "$bin" replay "$corpus" --jobs 1 --quiet --format json --profile max-turns)
cat > /tmp/looptune-grid-1000.toml <<'TOML'
family = "gemini"
profile = "gemini-latest"
stock_profiles = false
[axes]
tool_call_threshold = { start = 2, stop = 11, step = 1 }
content_loop_threshold = { start = 5, stop = 14, step = 1 }
llm_check_after_turns = { start = 10, stop = 100, step = 10 }
TOML
read grid grid_kb < <(secs "$bin" sweep "$corpus" --grid /tmp/looptune-grid-1000.toml --jobs 1 --quiet --out /tmp/looptune-bench-sweep)
read gridall gridall_kb < <(secs "$bin" sweep "$corpus" --grid /tmp/looptune-grid-1000.toml --quiet --out /tmp/looptune-bench-sweep)
mb=$(calc "$size / 1000000")
printf 'corpus: %d sessions, %.1f MB\n' "$n" "$mb"
printf 'sha256sum:                      %6.2f s  %7.1f MB/s\n' "$sha" "$(calc "$mb / $sha")"
printf 'replay gemini-latest, 1 core:   %6.2f s  %7.1f MB/s  peak %d MB  (%.2fx sha256sum)\n' "$one" "$(calc "$mb / $one")" $((one_kb / 1024)) "$(calc "$sha / $one")"
printf 'replay max-turns (parse floor): %6.2f s  %7.1f MB/s  peak %d MB\n' "$base" "$(calc "$mb / $base")" $((base_kb / 1024))
printf 'sweep 1000 configs, 1 core:     %6.2f s  (%.2fx one configuration)  peak %d MB\n' "$grid" "$(calc "$grid / $one")" $((grid_kb / 1024))
printf 'sweep 1000 configs, all cores:  %6.2f s  peak %d MB\n' "$gridall" $((gridall_kb / 1024))
