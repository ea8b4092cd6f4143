#!/usr/bin/env bash
# Whole-binary figures on a generated corpus: end-to-end replay (parse
# included) on one core and on all cores, peak memory, a 1,000-configuration
# sweep, and sha256sum over the same bytes, with events/s and the ratios to the
# original detector and to sha256sum.
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
events=$(cat "$corpus"/*.jsonl | wc -l)   # one record per line, every record an event
# Gemini CLI's own service in Node on this kind of machine (issue #3, benches/README.md).
original_eps=38000
cat "$corpus"/*.jsonl > /dev/null   # warm the page cache
calc() { awk "BEGIN { print $* }"; }
secs() { /usr/bin/time -f "%e %M" "$@" 2>&1 >/dev/null | tail -1; }
read sha _ < <(secs sha256sum "$corpus"/*.jsonl)
read one one_kb < <(secs "$bin" replay "$corpus" --jobs 1 --quiet --format json)
read two two_kb < <(secs "$bin" replay "$corpus" --quiet --format json)
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
line() { # label seconds peak_kb
  printf '%-34s %6.2f s  %7.1f MB/s  %9.0f events/s  %5.1fx original  %4.2fx sha256sum  peak %d MB\n' \
    "$1" "$2" "$(calc "$mb / $2")" "$(calc "$events / $2")" "$(calc "$events / $2 / $original_eps")" \
    "$(calc "$sha / $2")" $(($3 / 1024))
}
printf 'corpus: %d sessions, %d events, %.1f MB; %d cores\n' "$n" "$events" "$mb" "$(nproc)"
printf '%-34s %6.2f s  %7.1f MB/s\n' "sha256sum" "$sha" "$(calc "$mb / $sha")"
line "replay gemini-latest, 1 core" "$one" "$one_kb"
line "replay gemini-latest, all cores" "$two" "$two_kb"
line "replay max-turns (parse floor)" "$base" "$base_kb"
printf '%-34s %6.2f s  (%.2fx one configuration)  peak %d MB\n' "sweep 1000 configs, 1 core" "$grid" "$(calc "$grid / $one")" $((grid_kb / 1024))
printf '%-34s %6.2f s  (%.2fx one configuration)  peak %d MB\n' "sweep 1000 configs, all cores" "$gridall" "$(calc "$gridall / $two")" $((gridall_kb / 1024))
