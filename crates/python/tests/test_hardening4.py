"""Issue #42's items 19-21 (SweepResult.write through a symlink, a string
taken for a list of paths, a Detector fed from several threads) and issue
#44's Detector(config=...)."""

import json
import os
import pathlib
import shutil
import stat
import threading

import pytest

import looptune
from conftest import FIXTURES, ROOT

LABELS = ROOT / "fixtures" / "labels.csv"


@pytest.fixture(scope="module")
def result():
    return looptune.sweep([FIXTURES], labels=LABELS)


# Item 19.


def test_write_replaces_a_symlink_and_leaves_its_target(result, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    os.chmod(victim, 0o600)
    out = tmp_path / "out"
    out.mkdir()
    (out / "summary.json").symlink_to(victim)
    (out / "sweep.csv").symlink_to(tmp_path / "dangling")
    written = result.write(out)
    assert victim.read_text() == "keep me", "written through the link"
    assert not (tmp_path / "dangling").exists(), "a dangling link's target was created"
    for name in ("summary.json", "sweep.csv"):
        p = out / name
        assert not p.is_symlink() and p.is_file(), name
        assert str(p) in written
    assert json.loads((out / "summary.json").read_text()) == result.summary
    # A new file's mode is the umask's, as the command gives it (the
    # replaced link's target keeps its own; nothing private is widened).
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(os.stat(out / "sweep.csv").st_mode) == 0o666 & ~umask
    # No temporary file is left.
    assert not [n for n in os.listdir(out) if n.startswith(".")]


def test_write_keeps_an_existing_files_mode(result, tmp_path):
    (tmp_path / "summary.json").write_text("old")
    os.chmod(tmp_path / "summary.json", 0o640)
    result.write(tmp_path)
    assert stat.S_IMODE(os.stat(tmp_path / "summary.json").st_mode) == 0o640
    assert json.loads((tmp_path / "summary.json").read_text()) == result.summary


def test_a_failed_write_leaves_the_folder_as_it_was(result, tmp_path):
    # `sweep.csv` is a folder: its rename fails after the others are staged.
    (tmp_path / "detections.csv").write_text("old")
    (tmp_path / "sweep.csv").mkdir()
    with pytest.raises(IsADirectoryError, match="sweep.csv"):
        result.write(tmp_path)
    assert (tmp_path / "detections.csv").read_text() == "old"
    assert sorted(os.listdir(tmp_path)) == ["detections.csv", "sweep.csv"]


# Item 20.


def test_a_single_path_is_one_path(tmp_path, monkeypatch):
    # Iterated, "loop.jsonl" would be the paths "l", "o", "p", ".", ...
    shutil.copy(FIXTURES / "loop_identical_read.jsonl", tmp_path / "loop.jsonl")
    monkeypatch.chdir(tmp_path)
    want = looptune.replay(["loop.jsonl"])
    assert len(want) == 1
    assert looptune.replay("loop.jsonl") == want
    assert looptune.replay(pathlib.Path("loop.jsonl")) == want
    assert looptune.replay(b"loop.jsonl") == want
    single = looptune.sweep("loop.jsonl")
    assert single.summary["sessions"] == looptune.sweep(["loop.jsonl"]).summary["sessions"]


def test_a_path_that_is_no_path_is_a_type_error():
    with pytest.raises(TypeError, match="iterable of paths"):
        looptune.replay(42)
    with pytest.raises(TypeError, match="os.PathLike"):
        looptune.replay([FIXTURES, 42])
    with pytest.raises(TypeError, match="iterable of paths"):
        looptune.sweep(None)


# Item 21.


def test_a_detector_shared_by_threads_takes_every_record():
    call = {"type": "tool_call", "session": "t", "name": "read_file", "args": {"path": "a.py"}}
    threads, each = 8, 25
    det = looptune.Detector("gemini-latest", set={"tool_call_threshold": 3})
    det.feed({"type": "session", "session": "t"})
    hits, errors = [], []
    start = threading.Barrier(threads)

    def work():
        start.wait()
        try:
            for _ in range(each):
                hits.extend(det.feed(call))
        except Exception as e:  # noqa: BLE001 - the test reports any
            errors.append(e)

    pool = [threading.Thread(target=work) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    assert not errors, errors
    assert det.records == 1 + threads * each
    # The same records fed by one thread (all alike: order does not matter).
    alone = looptune.Detector("gemini-latest", set={"tool_call_threshold": 3})
    want = alone.feed({"type": "session", "session": "t"})
    for _ in range(threads * each):
        want += alone.feed(call)
    assert want
    assert sorted(hits, key=lambda h: (h.event, h.strike)) == want


# Issue #44: Detector(config=...).


def first_profiles():
    """One profile per family (each settling rule included)."""
    seen = {}
    for p in looptune.profiles():
        seen.setdefault(p.family, p.name)
    return sorted(seen.values())


def export(tmp_path, profile, sets=()):
    cfg = tmp_path / f"{profile}.toml"
    args = ["export", "--profile", profile]
    for s in sets:
        args += ["--set", s]
    code, _ = looptune.run(args + ["--for", "looptune", "-o", str(cfg)])
    assert code == 0
    return cfg


def replayed(cfg, path):
    code, out = looptune.run(
        ["replay", "--config", str(cfg), "--all", "--format", "json", "--quiet", str(path)]
    )
    assert code in (0, 1)
    (session,) = [json.loads(l) for l in out.splitlines() if l.strip()]
    return [(d["kind"], d["turn"], d["event"], d["strike"], d["detail"]) for d in session["detections"]]


def fed(det, path):
    det.reset()
    hits = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            hits += det.feed(line)
    hits += det.finish()
    return [(h.kind, h.turn, h.event, h.strike, h.detail) for h in hits]


# Turns renumbered after a late first `turn` record (see test_detector.py).
FIXTURE_FILES = sorted(p for p in FIXTURES.glob("*.jsonl") if p.name != "04_turn_zero.jsonl")


@pytest.mark.parametrize("profile", first_profiles())
def test_a_config_file_detects_what_replay_config_does(tmp_path, profile):
    sets = ["tool_call_threshold=3"] if profile == "gemini-latest" else []
    cfg = export(tmp_path, profile, sets)
    det = looptune.Detector(config=cfg)
    assert det.profile == profile
    fired = 0
    for path in FIXTURE_FILES:
        want = replayed(cfg, path)
        key = lambda h: (h[2], h[3], h[0])
        assert sorted(fed(det, path), key=key) == sorted(want, key=key), f"{path.name} under {cfg.name}"
        fired += len(want)
    if profile == "gemini-latest":
        assert fired > 0


def test_a_config_files_values_are_the_ones_run(tmp_path):
    # The file's threshold, not the profile's: it fires earlier.
    path = FIXTURES / "loop_identical_read.jsonl"
    low = looptune.Detector(config=str(export(tmp_path, "gemini-latest", ["tool_call_threshold=3"])))
    stock = looptune.Detector("gemini-latest")
    assert fed(low, path) and fed(stock, path)
    assert fed(low, path)[0][2] < fed(stock, path)[0][2]


def test_a_config_file_is_the_whole_detector(tmp_path):
    cfg = export(tmp_path, "gemini-latest")
    with pytest.raises(looptune.ConfigError, match="drop profile and set"):
        looptune.Detector("crush", config=cfg)
    with pytest.raises(looptune.ConfigError, match="drop profile and set"):
        looptune.Detector(set={"tool_call_threshold": 3}, config=cfg)
    bad = tmp_path / "bad.toml"
    bad.write_text('[detector]\nfamily = "gemini"\nprofile = "gemini-latest"\n[params]\nnope = 3\n')
    with pytest.raises(looptune.LooptuneError, match="bad.toml"):
        looptune.Detector(config=bad)
    with pytest.raises(looptune.InputError, match="missing.toml"):
        looptune.Detector(config=tmp_path / "missing.toml")
