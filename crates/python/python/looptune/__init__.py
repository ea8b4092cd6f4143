"""looptune for Python: replay recorded agent sessions through faithful ports
of the loop detectors agents ship, and run those detectors live.

- :func:`replay` runs ``looptune replay --format json`` in this process and
  returns its sessions as dicts.
- :class:`Detector` is one detector configuration fed canonical records one by
  one; it fires at the same record, with the same turn, kind, detail and
  strike, as ``looptune replay --all`` does on the whole session.
- :func:`run` runs any command line in this process.

Errors raise :class:`InputError` (bad logs, labels or grids: the message names
the file, line and field) or :class:`ConfigError` (unknown profiles,
parameters or values), both :class:`LooptuneError`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, Iterable, List, Mapping, Optional, Sequence, Union

from . import _looptune
from ._looptune import ConfigError, InputError, LooptuneError

__version__: str = _looptune.__version__

__all__ = [
    "ConfigError",
    "Detector",
    "Hit",
    "InputError",
    "LooptuneError",
    "Profile",
    "profiles",
    "replay",
    "run",
    "__version__",
]

PathLike = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class Hit:
    """One detection as it fires: the record it fires at (``event``, 1-based
    in the session), its turn, the detector's kind, its strike (the count of
    detections so far in this prompt) and the original's message."""

    kind: str
    turn: int
    event: int
    strike: int
    detail: str


@dataclass(frozen=True)
class Profile:
    """A named detector profile: its family, name and what it reproduces."""

    family: str
    name: str
    about: str


def profiles() -> List[Profile]:
    """Every profile of every family, as ``looptune detectors`` lists them."""
    return [Profile(*p) for p in _looptune.profiles()]


def run(args: Sequence[str]) -> "tuple[int, bytes]":
    """Run a looptune command line (without the program name) in this
    process: returns its exit code and what it printed on stdout. Progress
    and warnings go to stderr as on the command line; an error raises."""
    code, out = _looptune.run_cli([str(a) for a in args])
    return code, bytes(out)


def replay(
    paths: Iterable[PathLike],
    profiles: Optional[Sequence[str]] = None,
    *,
    set: Optional[Mapping[str, Any]] = None,
    all: bool = False,
    lenient: bool = False,
    jobs: Optional[int] = None,
) -> List[dict]:
    """Replay sessions (files or folders of any format looptune reads) under
    detector profiles (default ``gemini-latest``): one dict per session,
    sorted by id, exactly as ``looptune replay --format json`` prints them."""
    args: List[str] = ["replay", "--format", "json", "--quiet"]
    for p in profiles or []:
        args += ["--profile", p]
    for k, v in (set or {}).items():
        args += ["--set", f"{k}={_value(v)}"]
    if all:
        args.append("--all")
    if lenient:
        args.append("--lenient")
    if jobs is not None:
        args += ["--jobs", str(jobs)]
    args += [os.fspath(p) for p in paths]
    _code, out = run(args)
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def _value(v: Any) -> str:
    """A parameter value as ``--set`` spells it."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return ";".join(str(x) for x in v)
    return str(v)


class Detector:
    """One detector configuration, fed one canonical record at a time.

    ``profile`` names a profile (``looptune detectors`` lists them); ``set``
    overrides its parameters as ``--set`` does. Records are dicts in the
    canonical transcript format (or their JSON text). :meth:`feed` returns
    the detections that fire at that record. One session per detector:
    :meth:`reset` starts the next.
    """

    def __init__(
        self, profile: str = "gemini-latest", set: Optional[Mapping[str, Any]] = None
    ) -> None:
        pairs = [(str(k), _value(v)) for k, v in (set or {}).items()]
        self._inner = _looptune.Detector(profile, pairs)

    @property
    def family(self) -> str:
        """The detector family (``gemini``, ``opencode``, ...)."""
        return self._inner.family

    @property
    def profile(self) -> str:
        """The profile it runs."""
        return self._inner.profile

    @property
    def records(self) -> int:
        """Records fed since the last reset."""
        return self._inner.records

    def feed(self, record: Union[Mapping[str, Any], str]) -> List[Hit]:
        """Feed one record; returns the detections that fire now."""
        text = record if isinstance(record, str) else json.dumps(record, ensure_ascii=False)
        return [Hit(*h) for h in self._inner.feed_json(text.strip())]

    def finish(self) -> List[Hit]:
        """The session has ended: the detections that fire at its end. A
        detector of a family that judges whole agent steps (``blade``,
        ``openhands``) returns a detection once the next record confirms it,
        so the last step's comes here."""
        return [Hit(*h) for h in self._inner.finish()]

    def reset(self) -> None:
        """Forget the session: the next record starts a new one."""
        self._inner.reset()

    def __repr__(self) -> str:
        return f"Detector({self.profile!r}, records={self.records})"
