#!/usr/bin/env bash
# Issue 44: latency of `looptune guard --agent claude-code` per tool call on
# a 1,000-call Claude Code transcript (target: under 20 ms). The hook runs
# once per call: the time is a whole process, from spawn to exit, reading
# the transcript and replaying it with the pending call.
# Usage: benches/guard-latency.sh [PROFILE] [CALLS]   (release build; figures on stderr)
set -euo pipefail
cd "$(dirname "$0")/.."
profile=${1:-looptune-default}
calls=${2:-1000}
cargo build --release -q
bin=$PWD/target/release/looptune
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# A Claude Code transcript: a prompt, then CALLS Bash calls with changing
# commands, each answered, so no rule fires and the whole file is read.
awk -v n="$calls" 'BEGIN {
    print "{\"type\":\"user\",\"uuid\":\"u0\",\"sessionId\":\"S\",\"message\":{\"role\":\"user\",\"content\":\"build it\"}}"
    for (i = 1; i <= n; i++) {
        printf "{\"type\":\"assistant\",\"uuid\":\"a%d\",\"parentUuid\":\"u%d\",\"sessionId\":\"S\",\"message\":{\"role\":\"assistant\",\"id\":\"m%d\",\"content\":[{\"type\":\"tool_use\",\"id\":\"t%d\",\"name\":\"Bash\",\"input\":{\"command\":\"make step%d\"}}]}}\n", i, i-1, i, i, i
        printf "{\"type\":\"user\",\"uuid\":\"u%d\",\"parentUuid\":\"a%d\",\"sessionId\":\"S\",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t%d\",\"content\":\"ok %d\"}]}}\n", i, i, i, i
    }
}' > "$dir/S.jsonl"
printf '{"session_id":"S","transcript_path":"%s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"make next"},"tool_use_id":"t-next"}' \
    "$dir/S.jsonl" > "$dir/hook.json"
runs=50
start=$(date +%s%N)
for _ in $(seq $runs); do
    "$bin" guard --agent claude-code --profile "$profile" < "$dir/hook.json" || true
done
end=$(date +%s%N)
echo "guard --agent claude-code --profile $profile, $calls-call transcript ($(wc -c < "$dir/S.jsonl") bytes): $(( (end - start) / runs / 1000 )) us per call (mean of $runs)" >&2
