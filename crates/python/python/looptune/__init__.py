"""looptune for Python: replay recorded agent sessions through faithful ports
of the loop detectors agents ship, and run those detectors live.

- :func:`replay` runs ``looptune replay --format json`` in this process and
  returns its sessions as dicts.
- :class:`Detector` is one detector configuration fed canonical records one by
  one; it fires at the same record, with the same turn, kind, detail and
  strike, as ``looptune replay --all`` does on the whole session.
- :func:`sweep` runs ``looptune sweep`` in this process and returns a
  :class:`SweepResult`: its tables (``configs()``, ``groups()``,
  ``detections()``) as Arrow streams, its recommendation, ``write(dir)``.
- :func:`run` runs any command line in this process.

Errors raise :class:`InputError` (bad logs, labels or grids: the message names
the file, line and field) or :class:`ConfigError` (unknown profiles,
parameters or values), both :class:`LooptuneError`.
"""

from __future__ import annotations

import errno
import json
import os
import secrets
import tempfile
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
    "sweep",
    "SweepResult",
    "Table",
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
    paths: Union[PathLike, Iterable[PathLike]],
    profiles: Optional[Sequence[str]] = None,
    *,
    set: Optional[Mapping[str, Any]] = None,
    all: bool = False,
    lenient: bool = False,
    jobs: Optional[int] = None,
) -> List[dict]:
    """Replay sessions (files or folders of any format looptune reads) under
    detector profiles (default ``gemini-latest``): one dict per session,
    sorted by id, exactly as ``looptune replay --format json`` prints them.
    ``paths`` is one path or an iterable of paths."""
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
    args += _paths(paths)
    _code, out = run(args)
    return [json.loads(line) for line in out.splitlines() if line.strip()]


class Table:
    """One of a sweep's tables (the CSV file's columns, typed: counts as
    integers, rates as floats, ids and labels as strings, empty cells as
    nulls). It implements the Arrow PyCapsule interface, so
    ``pyarrow.table(t)``, ``polars.from_arrow(t)`` and DuckDB read it
    directly; :meth:`to_pandas` and :meth:`to_arrow` need pyarrow."""

    def __init__(self, path: str, name: str) -> None:
        self._path = path
        self.name = name

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        return _looptune.parquet_stream(self._path)

    def to_arrow(self) -> Any:
        """A ``pyarrow.Table`` (needs pyarrow)."""
        import pyarrow

        return pyarrow.table(self)

    def to_pandas(self) -> Any:
        """A ``pandas.DataFrame`` (needs pyarrow and pandas)."""
        return self.to_arrow().to_pandas()

    def __repr__(self) -> str:
        return f"<looptune.Table {self.name}>"


class SweepResult:
    """What ``looptune sweep`` writes, in memory: ``configs()`` (one row per
    configuration: ``sweep.csv``), ``groups()`` (per configuration and
    group: ``groups.csv``), ``detections()`` (``detections.csv``),
    ``recommendation`` and ``summary`` (``summary.json``), and
    :meth:`write` to put the files the command writes in a folder."""

    def __init__(self, folder: "tempfile.TemporaryDirectory[str]") -> None:
        self._folder = folder
        self._dir = folder.name
        with open(os.path.join(self._dir, "summary.json"), encoding="utf-8") as f:
            self.summary: dict = json.load(f)
        self.recommendation: Any = self.summary.get("recommendation")

    def _table(self, name: str) -> Table:
        return Table(os.path.join(self._dir, f"{name}.parquet"), name)

    def configs(self) -> Table:
        return self._table("sweep")

    def groups(self) -> Table:
        return self._table("groups")

    def detections(self) -> Table:
        return self._table("detections")

    def write(self, folder: PathLike) -> List[str]:
        """Write ``sweep.csv``, ``detections.csv``, ``groups.csv``,
        ``summary.json`` and ``report.html`` (and the Parquet files) into
        ``folder``, as ``looptune report`` would from the same result;
        returns the paths written.

        As the command does, each file is written beside its destination
        and renamed over it once every file is written: a symlink there is
        replaced, never written through, and a file that cannot be written
        (a full disk, a folder in the way) leaves every file as it was."""
        out = os.fsdecode(os.fspath(folder))
        os.makedirs(out, exist_ok=True)
        names = [n for n in sorted(os.listdir(self._dir)) if not n.startswith(".")]
        for name in names:
            dest = os.path.join(out, name)
            # Checked before any rename: renaming over a folder would fail
            # with the files before it already replaced.
            if os.path.isdir(dest) and not os.path.islink(dest):
                raise IsADirectoryError(errno.EISDIR, "a folder is in the way", dest)
        staged: List["tuple[str, str]"] = []
        try:
            for name in names:
                dest = os.path.join(out, name)
                staged.append((_stage(os.path.join(self._dir, name), dest), dest))
            for tmp, dest in staged:
                os.replace(tmp, dest)
        finally:
            for tmp, _dest in staged:
                if os.path.lexists(tmp):
                    os.unlink(tmp)
        return [dest for _tmp, dest in staged]


def _stage(src: str, dest: str) -> str:
    """A copy of ``src`` in a new temporary file beside ``dest``, with the
    mode ``dest`` will have (the existing file's, else the umask's, as for
    any new file); returns its path."""
    folder = os.path.dirname(dest) or "."
    try:
        mode = os.stat(dest).st_mode & 0o7777
    except OSError:
        mode = None
    while True:
        tmp = os.path.join(folder, f".looptune-{secrets.token_hex(6)}.tmp")
        try:
            # O_EXCL: never an existing file, nor a link planted at the name.
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            break
        except FileExistsError:
            continue
    try:
        with os.fdopen(fd, "wb") as w, open(src, "rb") as r:
            while True:
                block = r.read(1 << 20)
                if not block:
                    break
                w.write(block)
            if mode is not None:
                os.chmod(w.fileno(), mode)
            w.flush()
            os.fsync(w.fileno())
    except BaseException:
        os.unlink(tmp)
        raise
    return tmp


def sweep(
    paths: Union[PathLike, Iterable[PathLike]],
    labels: Union[None, PathLike, Sequence[PathLike]] = None,
    grid: Optional[PathLike] = None,
    jobs: Optional[int] = None,
    lenient: bool = False,
    options: Sequence[str] = (),
) -> SweepResult:
    """Run ``looptune sweep`` over ``paths`` (one path or an iterable of
    paths; the default grid unless ``grid`` names a TOML file) and score it
    against ``labels`` (one labels file or several). ``options`` passes
    further command-line options as they are spelled there (``["--combine",
    "2"]``, ``["--group-by", "model"]``)."""
    # The inputs first: a bad argument raises before a folder is made.
    inputs = _paths(paths)
    args: List[str] = ["sweep", "--quiet", "--parquet"]
    if labels is not None:
        for l in [labels] if isinstance(labels, (str, os.PathLike)) else labels:
            args += ["--labels", os.fspath(l)]
    if grid is not None:
        args += ["--grid", os.fspath(grid)]
    if jobs is not None:
        args += ["--jobs", str(jobs)]
    if lenient:
        args.append("--lenient")
    args += [str(o) for o in options]
    folder = tempfile.TemporaryDirectory(prefix="looptune-sweep-")
    args += ["--out", folder.name]
    args += inputs
    code, _out = run(args)
    if code not in (0, 1):
        raise LooptuneError(f"looptune sweep exited with {code}")
    return SweepResult(folder)


def _paths(paths: Any) -> List[str]:
    """``paths`` as command-line arguments: one path (``str``, ``bytes`` or
    ``os.PathLike``) is one argument, not the characters of a string."""
    if isinstance(paths, (str, bytes, os.PathLike)):
        paths = [paths]
    try:
        items = list(paths)
    except TypeError:
        raise TypeError(
            f"paths must be a path or an iterable of paths, not {type(paths).__name__}"
        ) from None
    out = []
    for p in items:
        if not isinstance(p, (str, bytes, os.PathLike)):
            raise TypeError(f"a path must be str, bytes or os.PathLike, not {type(p).__name__}")
        out.append(os.fsdecode(p))
    return out


def _value(v: Any) -> str:
    """A parameter value as ``--set`` spells it."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return ";".join(str(x) for x in v)
    return str(v)


class Detector:
    """One detector configuration, fed one canonical record at a time.

    ``profile`` names a profile (``looptune detectors`` lists them; default
    ``gemini-latest``); ``set`` overrides its parameters as ``--set`` does.
    ``config`` instead names a configuration file as ``looptune export
    --for looptune`` writes it (``replay --config FILE.toml`` runs the same
    rule). Records are dicts in the canonical transcript format (or their
    JSON text). :meth:`feed` returns the detections that fire at that
    record. One session per detector: :meth:`reset` starts the next.
    Threads may share a detector: feeds are taken one at a time, in the
    order they get the detector's lock.
    """

    def __init__(
        self,
        profile: Optional[str] = None,
        set: Optional[Mapping[str, Any]] = None,
        config: Optional[PathLike] = None,
    ) -> None:
        pairs = None if set is None else [(str(k), _value(v)) for k, v in set.items()]
        path = None if config is None else os.fsdecode(os.fspath(config))
        self._inner = _looptune.Detector(profile, pairs, path)

    @property
    def family(self) -> str:
        """The detector family (``gemini``, ``opencode``, ...)."""
        return self._inner.family

    @property
    def profile(self) -> str:
        """The profile it runs."""
        return self._inner.profile

    @property
    def incremental(self) -> bool:
        """Whether a record costs amortised O(1): the family's checks keep
        their state between records (``max-turns``, ``roo``, ``cline``,
        ``opencode``, ``kilo``, ``crush``, ``kimi``, ``goose``, ``deepeval``,
        ``hermes``, ``qwen``, ``openclaw``, ``blade``, ``openhands``,
        ``openrouter-sdk``, the ``gemini`` and ``looptune`` families: every
        family). A configuration that is not would replay the session so
        far at every record (same hits, cost growing with the session)."""
        return self._inner.incremental

    @property
    def records(self) -> int:
        """Records fed since the last reset."""
        return self._inner.records

    @property
    def records_held(self) -> int:
        """Records held now. Once the session has a ``turn`` record, the
        records no rule reads again are forgotten, so a long session holds
        the rules' windows (a few records), not the session; a rule that
        reads the session's model or mode (``blade-legacy``'s plan mode,
        the ``deepv-*`` preview rules) keeps every record, as does a session
        numbered without ``turn`` records (a later one would renumber them)."""
        return self._inner.records_held

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
