"""A live Detector fires where `looptune replay --all` does, for every
profile of every family, on every fixture and conformance session."""

import json
import pathlib

import pytest

import looptune
from conftest import FIXTURES

PROFILES = [p.name for p in looptune.profiles()]


def sessions_in(folder: pathlib.Path):
    """The single-session canonical files of a folder (a Detector follows
    one session), with the replay's view of each."""
    # `expected/` folders hold the originals' answers, not sessions.
    files = sorted(f for f in folder.rglob("*.jsonl") if "expected" not in f.parts)
    assert files, f"no sessions under {folder}"
    out = []
    for f in files:
        replayed = looptune.replay([f], profiles=PROFILES, all=True, lenient=True)
        if len(replayed) == 1:
            out.append((f, replayed[0]))
    return out


def expected(replayed: dict, profile: str, path: pathlib.Path):
    renumbered = path.name in RENUMBERED
    return [
        (d["kind"], None if renumbered else d["turn"], d["event"], d["strike"], d["detail"])
        for d in replayed["detections"]
        if d["profile"] == profile
    ]


# A session whose first `turn` record comes after model records: the
# canonical format numbers turns from `turn` records once a session has any,
# so its early records are renumbered when the first one arrives (turn 1 ->
# 0). Hits returned before carry the number the session had then.
RENUMBERED = {"04_turn_zero.jsonl"}


def fed(path: pathlib.Path, profile: str):
    det = looptune.Detector(profile)
    hits = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            hits += det.feed(line)
    hits += det.finish()
    return [
        (h.kind, None if path.name in RENUMBERED else h.turn, h.event, h.strike, h.detail)
        for h in hits
    ]


def check_folder(folder: pathlib.Path, least: int):
    sessions = sessions_in(folder)
    assert len(sessions) >= least, f"only {len(sessions)} single-session files in {folder}"
    fired = 0
    for path, replayed in sessions:
        for profile in PROFILES:
            want = expected(replayed, profile, path)
            got = fed(path, profile)
            assert sorted(got, key=lambda h: (h[2], h[3], h[0])) == sorted(
                want, key=lambda h: (h[2], h[3], h[0])
            ), f"{path.name} under {profile}"
            fired += len(want)
    assert fired > 0


def test_every_profile_is_covered():
    assert "gemini-latest" in PROFILES and len(PROFILES) >= 30


def test_detector_equals_replay_on_the_fixtures():
    check_folder(FIXTURES, least=15)


def test_detector_equals_replay_on_conformance(conformance_dir):
    check_folder(conformance_dir, least=40)


def test_hits_come_at_the_record_that_fires_them():
    path = FIXTURES / "loop_identical_read.jsonl"
    det = looptune.Detector("gemini-latest", set={"tool_call_threshold": 3})
    for n, line in enumerate(path.read_text().splitlines(), start=1):
        for hit in det.feed(json.loads(line)):
            assert hit.event == n
    assert det.records == n
    det.reset()
    assert det.records == 0


def test_a_lower_threshold_fires_earlier():
    path = FIXTURES / "loop_identical_read.jsonl"

    def first(**set):
        det = looptune.Detector("gemini-latest", set=set)
        for line in path.read_text().splitlines():
            hits = det.feed(line)
            if hits:
                return hits[0].event
        return None

    assert first(tool_call_threshold=3) < first()


def test_a_detector_follows_one_session():
    det = looptune.Detector()
    det.feed({"type": "session", "session": "a"})
    with pytest.raises(looptune.ConfigError, match="reset"):
        det.feed({"type": "session", "session": "b"})


def test_the_detector_says_whether_it_is_incremental():
    # Every family's checks keep their state between records.
    assert looptune.Detector("max-turns").incremental
    assert looptune.Detector("roo").incremental
    assert looptune.Detector("looptune-default").incremental
    assert looptune.Detector("kilo").incremental
    assert looptune.Detector("crush").incremental
    assert looptune.Detector("qwen-all").incremental
    assert looptune.Detector("openclaw-2026-05").incremental
    # Families whose detections settle with later records hold them.
    assert looptune.Detector("blade-legacy").incremental
    assert looptune.Detector("openhands-v1").incremental
    assert looptune.Detector("openrouter-sdk").incremental


def test_a_long_session_is_held_as_the_rules_windows():
    # With `turn` records nothing renumbers what came before: the records
    # no rule reads again are forgotten.
    det = looptune.Detector("looptune-default")
    det.feed({"type": "user", "text": "go", "session": "s"})
    for k in range(3000):
        det.feed({"type": "turn", "session": "s"})
        det.feed({"type": "tool_call", "name": "read_file", "args": {"path": f"f{k % 97}"}, "id": f"c{k}", "session": "s"})
        det.feed({"type": "tool_result", "name": "read_file", "id": f"c{k}", "output": "x", "session": "s"})
    assert det.records == 9001
    assert det.records_held < 200
    # Blade's legacy service reads plan mode: a change rereads every record.
    blade = looptune.Detector("blade-legacy")
    for k in range(300):
        blade.feed({"type": "turn", "session": "s"})
    assert blade.records_held == 300
