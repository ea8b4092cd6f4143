"""The live Detector from Python (issue 44): 100,000 canonical records fed one
by one to looptune.Detector(PROFILE) for each PROFILE given (default: one
profile of each family fed incrementally), the same session as
benches/detector.rs. Run after `maturin develop --release -m
crates/python/Cargo.toml`: python benches/detector.py max-turns cline roo"""
import time, looptune, sys
# One profile of each family a Detector feeds incrementally.
PROFILES = ["max-turns", "cline", "roo", "gemini-latest", "opencode", "kilo",
            "crush", "kimi", "goose", "deepeval", "hermes", "qwen", "qwen-all",
            "openclaw", "openclaw-2026-05", "blade-legacy", "openhands-v1",
            "openrouter-sdk", "looptune-default"]
n = 100_000
lines = ['{"type":"user","text":"fix the build","session":"b"}']
k = 0
while len(lines) < n:
    m = len(lines) % 4
    if m == 0: k += 1  # one call a turn; eight identical ones every fifty turns
    f = 0 if k % 50 < 8 else k % 997
    if m == 0: lines.append('{"type":"turn","session":"b"}')
    elif m == 1: lines.append('{"type":"tool_call","name":"read_file","args":{"path":"src/f%d.rs"},"id":"c%d","session":"b"}' % (f, k))
    elif m == 2: lines.append('{"type":"tool_result","name":"read_file","id":"c%d","output":"fn f%d() {}","session":"b"}' % (k, f))
    else: lines.append('{"type":"content","text":"Reading file %d now.","session":"b"}' % f)
for p in sys.argv[1:] or PROFILES:
    d = looptune.Detector(p)
    t = time.perf_counter(); hits = 0
    for l in lines:
        hits += len(d.feed(l))
    dt = time.perf_counter() - t
    print(f"{p}: {n} records in {dt:.2f} s = {n/dt/1e3:.0f} k records/s ({hits} hits, incremental={d.incremental})")
