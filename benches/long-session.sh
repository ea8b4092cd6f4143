#!/usr/bin/env bash
# Issue #31, items 8 and 12: cost that must stay linear.
#  1. One long session: replay time of openhands-v0 (and of every family) at
#     100k, 200k and 400k records; the 400k/100k ratio should be about 4
#     (it was 20: 1.0 s, 3.2 s, 20.6 s), and 400k under a few seconds.
#  2. Argument size per configuration: one session whose tool calls carry
#     MB-sized arguments, replayed once and swept under the default grid
#     (474 configurations); configurations that share a check's per-session
#     work (qwen's repeat keys, crush's step signatures, the calls' argument
#     texts of opencode and blade-legacy) no longer redo it.
#  3. The looptune family (issue #32): a product grid over four of its rules'
#     axes (6 x 5 x 5 x 6 = 900 configurations) costs about the sum of the
#     axes, not the product: each rule's check runs once per distinct setting
#     of that rule (22 runs), and the action keys once per session.
# Usage: benches/long-session.sh   (release build; figures on stderr, one per line)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q
bin=target/release/looptune
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
secs() { /usr/bin/time -f "%e %M" "$@" 2>&1 >/dev/null | tail -1; }
# A session of N records: a prompt, then turns of a call with changing
# arguments, its result and a message, so no detector stops it early.
session() {
    awk -v n="$1" 'BEGIN {
        print "{\"type\":\"user\",\"text\":\"go\"}"
        for (i = 1; i < n; i += 4) {
            print "{\"type\":\"turn\"}"
            printf "{\"type\":\"tool_call\",\"name\":\"run_shell_command\",\"args\":{\"command\":\"ls %d\"}}\n", i
            printf "{\"type\":\"tool_result\",\"name\":\"run_shell_command\",\"output\":\"file%d\"}\n", i
            printf "{\"type\":\"content\",\"text\":\"step %d\"}\n", i
        }
    }' > "$2"
}
families=gemini,opencode,blade,openhands,roo,cline,goose,crush,kimi,qwen,max-turns,looptune
declare -A t
for n in 100000 200000 400000; do
    session "$n" "$dir/s$n.jsonl"
    read t[$n] kb < <(secs "$bin" replay "$dir/s$n.jsonl" --quiet --all --profile openhands-v0 --format json)
    read every kb2 < <(secs "$bin" replay "$dir/s$n.jsonl" --quiet --all --detector "$families" --format json)
    echo "openhands-v0, $n records: ${t[$n]} s (${kb} KB); every family: $every s" >&2
done
echo "openhands-v0, 400k / 100k: $(awk "BEGIN { printf \"%.1f\", ${t[400000]} / ${t[100000]} }") (linear: 4)" >&2
# Arguments: 33 calls of 1 MB each (33 MB).
python3 - "$dir/args.jsonl" <<'PY'
import json, sys
big = "a" * 1_000_000
with open(sys.argv[1], "w") as f:
    f.write('{"type":"user","text":"go"}\n')
    for i in range(33):
        f.write(json.dumps({"type": "tool_call", "name": "write_file", "args": {"path": "/x", "content": big}}, separators=(",", ":")) + "\n")
        f.write('{"type":"tool_result","name":"write_file","output":"ok"}\n')
PY
read r rkb < <(secs "$bin" replay "$dir/args.jsonl" --quiet --detector "$families")
read w wkb < <(secs "$bin" sweep "$dir/args.jsonl" --quiet --out "$dir/out")
echo "33 MB of arguments: replay (every family) $r s, $rkb KB; default sweep $w s, $wkb KB" >&2
# The looptune family: one configuration against a 900-configuration product
# grid over four rules, on one core, on 2,000 synthetic sessions.
"$bin" synth --out "$dir/synth" --sessions 2000 --bytes 11000 --seed 1 >/dev/null
cat > "$dir/looptune.toml" <<'TOML'
family = "looptune"
profile = "looptune-default"
stock_profiles = false
[axes]
repeat_stop = [0, 3, 4, 5, 6, 8]
window_stop = [0, 4, 5, 6, 8]
cycle_stop = [0, 3, 4, 5, 6]
error_stop = [0, 3, 4, 5, 6, 8]
TOML
read one okb < <(secs "$bin" replay "$dir/synth" --quiet --jobs 1 --profile looptune-default --format json)
read grid gkb < <(secs "$bin" sweep "$dir/synth" --quiet --jobs 1 --grid "$dir/looptune.toml" --out "$dir/lt")
echo "looptune, 2,000 sessions, one core: one configuration $one s; 900 configurations $grid s ($(awk "BEGIN { printf \"%.1f\", $grid / $one }") x; sum of the axes 22, product 900)" >&2
