"""The command, replay() and the errors."""

import os
import pathlib
import subprocess
import sys

import pytest

import looptune
from conftest import FIXTURES, ROOT


def script():
    exe = pathlib.Path(sys.executable).parent / ("looptune.exe" if os.name == "nt" else "looptune")
    assert exe.exists(), f"the wheel installs the looptune command next to {sys.executable}"
    return str(exe)


def test_the_wheel_carries_the_command():
    done = subprocess.run([script(), "--help"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "Exit codes" in done.stdout and "sweep" in done.stdout


def test_the_command_exits_2_on_bad_input(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type":"tool_call","name":1}\n')
    done = subprocess.run([script(), "replay", str(bad)], capture_output=True, text=True)
    assert done.returncode == 2
    assert "bad.jsonl:1" in done.stderr


def test_the_command_sweeps_the_fixtures(tmp_path):
    done = subprocess.run(
        [script(), "sweep", str(FIXTURES), "--labels", str(ROOT / "fixtures" / "labels.csv"),
         "--out", str(tmp_path), "--quiet"],
        capture_output=True, text=True,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "sweep.csv").exists() and (tmp_path / "report.html").exists()


def test_replay_is_the_commands_json():
    got = looptune.replay([FIXTURES], profiles=["gemini-latest", "crush"])
    done = subprocess.run(
        [script(), "replay", "--format", "json", "--profile", "gemini-latest,crush", str(FIXTURES)],
        capture_output=True, text=True,
    )
    import json

    assert got == [json.loads(l) for l in done.stdout.splitlines()]
    assert len(got) == 16


def test_run_returns_the_exit_code_and_output():
    code, out = looptune.run(["detectors"])
    assert code == 0 and b"gemini" in out
    code, out = looptune.run(["--version"])
    assert code == 0 and out.startswith(b"looptune")


def test_bad_input_raises_input_error_naming_file_and_line(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type":"turn"}\n{"type":"tool_call","name":1}\n')
    with pytest.raises(looptune.InputError, match=r"bad\.jsonl:2: .*name"):
        looptune.replay([bad])


def test_a_bad_record_fed_names_its_number_and_field():
    det = looptune.Detector()
    det.feed({"type": "turn"})
    with pytest.raises(looptune.InputError, match=r"record 2: .*name"):
        det.feed({"type": "tool_call", "name": 1})
    # The bad record was not kept.
    assert det.records == 1


def test_unknown_profiles_and_parameters_raise_config_error():
    with pytest.raises(looptune.ConfigError, match="unknown profile"):
        looptune.Detector("gemini-lates")
    with pytest.raises(looptune.ConfigError, match="tool_call_threshold"):
        looptune.Detector("gemini-latest", set={"tool_call_treshold": 3})
    with pytest.raises(looptune.ConfigError):
        looptune.Detector("gemini-latest", set={"tool_call_threshold": "many"})
    with pytest.raises(looptune.ConfigError):
        looptune.replay([FIXTURES], profiles=["nope"])
    assert issubclass(looptune.InputError, looptune.LooptuneError)


def test_profiles_list_every_family():
    families = {p.family for p in looptune.profiles()}
    assert {"gemini", "opencode", "crush", "qwen", "goose"} <= families


def test_the_example_sweeps_the_fixtures(tmp_path):
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "notebook.py")],
        capture_output=True, text=True, cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "recommended: gemini-latest" in done.stdout
