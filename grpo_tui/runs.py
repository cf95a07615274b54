"""Many runs: which logs a set of paths names, one verdict per run through the one pipeline,
and a RunSet that follows them all from one thread (the runs overview).

`check A B DIR`, the overview and `export` of several runs all go through here, so a run's
verdict is the one `check RUN` gives (each run is its own Pipeline). No Textual here.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .judge.baseline import MIN_SEEDS, Baseline, from_stores
from .judge.engine import SEVERITY_ORDER, Alert
from .judge.ranges import RangeSet
from .judge.signals import BY_ID, signal_series
from .lines.files import InputError
from .pipeline import Pipeline, RunReport, judge_path, metric_runs, one_run, open_input

EXIT = {"ok": 0, "warning": 1, "critical": 2, "unknown": 3}
# The worst status of several runs: a judged problem outranks "could not judge", which
# outranks OK (so the exit code of `check A B` is 2 if any run is CRITICAL, 3 if one could
# not be read and none is WARNING or worse).
RANK = {"critical": 3, "warning": 2, "unknown": 1, "ok": 0}
SPARK = 64  # reward values a row keeps for the overview's sparkline
RESCAN_S = 2.0  # how often folders are listed for new logs


def worst(statuses: Iterable[str]) -> str:
    return max(statuses, key=lambda s: RANK.get(s, 1), default="unknown")


# ---------------------------------------------------------------------- which files
def is_input(folder: str, name: str) -> bool:
    """Whether a folder's file is a run's input: a `*.log`, or a `*.jsonl` of metric lines
    (lines/formats.py: Miles' metrics.jsonl, verl's file logger, ms-swift's logging.jsonl).
    Miles' dashboard folder holds other JSONL streams (phases, gpu_util/..., trajectories): there
    only metrics.jsonl is.  Hidden files are not."""
    if name.startswith("."):
        return False
    if name.endswith(".log"):
        return True
    if not name.endswith(".jsonl"):
        return False
    return name == "metrics.jsonl" or "dashboard" not in os.path.normpath(folder).split(os.sep)[-2:]


def folder_logs(folder: str, recursive: bool = False) -> list[str]:
    """The inputs (is_input: `*.log`, `*.jsonl`) of a folder (and its subfolders with
    `recursive`), sorted by path.  Hidden files and folders are skipped; symlinked folders are
    not followed."""
    out: list[str] = []
    if not recursive:
        try:
            with os.scandir(folder) as it:
                for e in it:
                    if is_input(folder, e.name) and _is_file(e):
                        out.append(os.path.join(folder, e.name))
        except OSError:
            return []
        return sorted(out)
    for root, dirs, files in os.walk(folder, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if is_input(root, name):
                out.append(os.path.join(root, name))
    return sorted(out)


def _is_file(entry: os.DirEntry) -> bool:
    try:
        return entry.is_file()
    except OSError:
        return False


def discover(paths: Iterable[str], recursive: bool = False) -> list[str]:
    """Files as given, folders as their logs; each file once (by its real path).

    A path that does not exist is kept: it is judged UNKNOWN with its reason."""
    out: list[str] = []
    seen: set[str] = set()
    for p in paths:
        if not os.path.isdir(p) or one_run(p):
            found = [p]
        else:  # a folder of logs, or of several runs' TensorBoard folders or W&B runs
            found = metric_runs(p) or folder_logs(p, recursive)
        for f in found:
            key = os.path.realpath(f)
            if key not in seen:
                seen.add(key)
                out.append(f)
    return out


def _metric_files(path: str):
    """The run's metric files when `path` is a TensorBoard folder or W&B run (None: a log, or
    several runs there, which the read then reports)."""
    try:
        return open_input(path)
    except InputError:
        return None


def display_names(paths: list[str], roots: Iterable[str] = ()) -> dict[str, str]:
    """Short unique names: relative to the folder a file was found in, else its file name
    (the path as given when two runs share a file name)."""
    roots = [r for r in roots if os.path.isdir(r)]
    names: dict[str, str] = {}
    for p in paths:
        name = os.path.basename(os.path.normpath(p))
        for r in roots:
            rel = os.path.relpath(p, r)
            if rel != "." and not rel.startswith(".."):  # (a run's own folder is no root of it)
                name = rel
                break
        names[p] = name
    counts: dict[str, int] = {}
    for n in names.values():
        counts[n] = counts.get(n, 0) + 1
    return {p: (n if counts[n] == 1 else p) for p, n in names.items()}


# ---------------------------------------------------------------------- one verdict per run
def top_alert(alerts: list[Alert]) -> Alert | None:
    """The alert that explains a run's badge: the most severe, open before cleared, newest."""
    if not alerts:
        return None
    return min(alerts, key=lambda a: (-SEVERITY_ORDER.get(a.severity, 0), not a.active, -a.seq))


def alert_words(a: Alert | None) -> str:
    if a is None:
        return ""
    where = f"@{a.rollout}" if a.rollout is not None else ""
    cleared = "" if a.active else f" (cleared at {a.cleared_at})"
    return f"{a.rule}{where}: {a.message}{cleared}"


def unknown_json(path: str, message: str) -> dict:
    """`check --json` for a run that could not be judged (same keys as a judged run)."""
    return {
        "path": path,
        "status": "unknown",
        "state": None,
        "ranges": None,
        "rollouts": 0,
        "last_rollout": None,
        "steps_per_rollout": 1,
        "signals": {},
        "alerts": [],
        "error": message,
    }


@dataclass
class RunResult:
    path: str
    report: RunReport | None = None
    error: str | None = None
    counts: object | None = None

    @property
    def status(self) -> str:
        return self.report.status if self.report is not None else "unknown"

    def to_json(self) -> dict:
        if self.report is None:
            return unknown_json(self.path, self.error or "not judged")
        return self.report.to_json(self.path)


def judge_many(
    paths: Iterable[str], ranges: RangeSet | None = None, *, ranges_label: str | None = None, now: float | None = None
) -> list[RunResult]:
    """Each file through its own pipeline, judged at the same `now` (as `check PATH` would)."""
    now = time.time() if now is None else now
    out = []
    for p in paths:
        try:
            pipe = judge_path(p, ranges, ranges_label=ranges_label, now=now)
        except InputError as exc:
            out.append(RunResult(p, error=str(exc)))
            continue
        out.append(RunResult(p, pipe.report(now), counts=pipe.parser.counts))
    return out


# ---------------------------------------------------------------------- many runs, live
@dataclass(frozen=True, slots=True)
class RunRow:
    """What the overview shows of one run: immutable, so the UI thread can read it while the
    reader thread builds the next one. Times are absolute (wall clock), so a row does not
    change as time passes; the UI turns them into ages."""

    path: str
    name: str
    status: str  # ok | warning | critical | unknown | loading
    state: str  # live | quiet | finished | waiting | loading
    rollouts: int = 0
    last_rollout: int | None = None
    last_data_at: float | None = None  # when the newest metric record was written
    last_line_at: float | None = None  # when the newest line was written
    finished_by: str | None = None
    top: str = ""  # the top alert in words
    top_severity: str | None = None
    alerts: int = 0
    reward: tuple[float, ...] = ()
    loaded: float = 1.0  # fraction of the file read (the first read of a big log)
    error: str | None = None
    ranges: str = "defaults"

    @property
    def rank(self) -> int:
        return -1 if self.status == "loading" else RANK.get(self.status, 1)

    def sort_key(self) -> tuple:
        """Most severe first, then the most recent data first, then by name."""
        recent = self.last_data_at if self.last_data_at is not None else (self.last_line_at or 0.0)
        return (-self.rank, -recent, self.name)


class _Run:
    def __init__(self, path: str, name: str, ranges: RangeSet | None, label: str, clock: Callable[[], float]) -> None:
        self.path, self.name = path, name
        self.lock = threading.Lock()
        self.clock = clock
        self.row: RunRow | None = None
        self.key: tuple = ()
        self.reset(ranges, label)

    def reset(self, ranges: RangeSet | None, label: str) -> None:
        # (imported here: `check` and `export` of files, which import this module, never follow
        # one, and importing asyncio with watchfiles slowed every such command's start)
        from .follow.follower import Follower
        from .follow.metric_files import MetricFilesFollower

        self.pipe = Pipeline(ranges, ranges_label=label, clock=self.clock)
        side = _metric_files(self.path)
        self.pipe.input = side.kind if side is not None else None
        self.follower: Any = MetricFilesFollower(side) if side is not None else Follower(self.path, from_start=True)
        self.loaded = False  # read to the end once: time may be judged from now on
        self.error: str | None = None
        self.generation = getattr(self, "generation", 0) + 1

    def close(self) -> None:
        self.follower.close()


class RunSet:
    """Every run of some paths (files, folders: new logs appear), each followed by name with
    its own Pipeline. One thread calls `pass_once` (it reads at most `chunks` MiB per run per
    pass, round robin: a huge log does not hold up the live ones); any thread may read rows
    and, under a run's lock, its series."""

    def __init__(
        self,
        paths: Iterable[str],
        *,
        recursive: bool = False,
        ranges: RangeSet | None = None,
        ranges_label: str | None = None,
        clock: Callable[[], float] = time.time,
        chunks: int = 2,
    ) -> None:
        self.paths = list(paths)
        self.recursive = recursive
        self.roots = [p for p in self.paths if os.path.isdir(p)]
        self.ranges = ranges
        self.ranges_label = ranges_label or ("defaults" if ranges is None else "file")
        self.clock = clock
        self.chunks = max(1, chunks)
        self.runs: dict[str, _Run] = {}
        self._lock = threading.Lock()  # guards self.runs (added to by rescan)
        self._last_scan = -math.inf
        self.rescan()

    # ------------------------------------------------------------------ runs
    def rescan(self) -> list[str]:
        """Add logs that appeared in the folders; returns the new paths."""
        self._last_scan = time.monotonic()
        found = discover(self.paths, self.recursive)
        new = [p for p in found if p not in self.runs]
        if not new:
            return []
        names = display_names(list(self.runs) + new, self.roots)
        with self._lock:
            for p in new:
                self.runs[p] = _Run(p, names[p], self.ranges, self.ranges_label, self.clock)
            for p, r in self.runs.items():
                r.name = names[p]
        return new

    def paths_now(self) -> list[str]:
        with self._lock:
            return list(self.runs)

    def rows(self) -> list[RunRow]:
        """Every run's newest row (a placeholder for runs not read yet), overview order."""
        with self._lock:
            runs = list(self.runs.values())
        out = [r.row or RunRow(r.path, r.name, "loading", "loading", loaded=0.0) for r in runs]
        return sorted(out, key=RunRow.sort_key)

    def set_ranges(self, ranges: RangeSet | None, label: str | None) -> None:
        """Judge every run against other ranges (a baseline): each is read again from its start."""
        self.ranges = ranges
        self.ranges_label = label or ("defaults" if ranges is None else "file")
        with self._lock:
            runs = list(self.runs.values())
        for r in runs:
            with r.lock:
                r.close()
                r.reset(self.ranges, self.ranges_label)
                r.row = None

    def close(self) -> None:
        with self._lock:
            runs = list(self.runs.values())
        for r in runs:
            with r.lock:
                r.close()

    # ------------------------------------------------------------------ reading
    def pass_once(self, now: float | None = None, after_run: Callable[[], None] | None = None) -> list[RunRow]:
        """Read what each run wrote since the last pass, judge time, return the rows that
        changed (`after_run()` is called after each run: a reader can post progress while a
        long first pass loads many histories). A run is judged on time only once its file has
        been read to the end (a half-read old log must not get the final pass early)."""
        if self.roots and time.monotonic() - self._last_scan >= RESCAN_S:
            self.rescan()
        with self._lock:
            runs = list(self.runs.values())
        changed: list[RunRow] = []
        for run in runs:
            with run.lock:
                self._read(run)
                t = self.clock() if now is None else now
                if run.loaded:
                    run.pipe.tick(t)
                # an idle run costs a stat and an O(1) state: its row is rebuilt only when
                # lines, alerts, file events or its state (live -> quiet) changed
                key = (
                    run.generation,
                    run.loaded,
                    run.pipe.lines_seen,
                    run.pipe.store.current.records,  # (a metric folder's runs read no lines)
                    run.pipe.changes,
                    len(run.pipe.store.segments),
                    run.error,
                    run.pipe.state(t).name,
                    None if run.loaded else run.follower.stats.get("position"),
                )
                if key != run.key or run.row is None:
                    run.key = key
                    row = self._row(run, t)
                    if row != run.row:
                        run.row = row
                        changed.append(row)
            if after_run is not None:
                after_run()
        return changed

    def load_all(self, now: float | None = None) -> list[RunRow]:
        """Read every run to its end now (tests, non-live views)."""
        while True:
            self.pass_once(now)
            if self.all_loaded():
                return self.rows()

    def _read(self, run: _Run) -> None:
        from .follow.follower import FileEvent, Lines
        from .follow.metric_files import Records

        for _ in range(self.chunks):
            for item in run.follower.poll():
                if isinstance(item, Lines):
                    run.pipe.feed(item.lines, item.written_at)
                elif isinstance(item, Records):
                    run.pipe.feed_items(item.items, item.written_at)
                elif isinstance(item, FileEvent):
                    ev = item.event
                    if ev in ("truncated", "replaced", "created"):
                        run.pipe.file_event(ev)
                        run.error = None
                    elif ev == "deleted":
                        run.pipe.flush()
                        run.error = "deleted"
                    elif ev == "waiting":
                        run.error = "no such file"
                        run.loaded = True
                    elif ev == "error":
                        run.error = item.detail
                        run.loaded = True
            if not run.follower.more:
                run.loaded = True
                return

    def _row(self, run: _Run, now: float | None) -> RunRow:
        now = self.clock() if now is None else now
        pipe = run.pipe
        seg = pipe.store.current
        if not run.loaded:
            size = _size(run.path)
            pos = run.follower.stats.get("position") or 0
            return RunRow(
                run.path,
                run.name,
                "loading",
                "loading",
                rollouts=len(seg.ids),
                loaded=min(1.0, pos / size) if size > 0 else 0.0,
                ranges=pipe.ranges_label,
            )
        rep = pipe.report(now)
        st = rep.run_state
        top = top_alert(rep.alerts)
        _, vals = signal_series(seg, BY_ID["reward"], last=SPARK)
        status = rep.status
        if run.error and not pipe.fed:
            status = "unknown"
        line_at, data_at = pipe.written_at()
        return RunRow(
            run.path,
            run.name,
            status,
            st.name,
            rollouts=rep.rollouts,
            last_rollout=rep.last_rollout,
            last_data_at=data_at,
            last_line_at=line_at,
            finished_by=st.finished_by,
            top=alert_words(top),
            top_severity=top.severity if top else None,
            alerts=len(rep.groups),
            reward=tuple(float(v) for v in np.asarray(vals, float)),
            error=run.error,
            ranges=pipe.ranges_label,
        )

    # ------------------------------------------------------------------ data for views
    def series(self, path: str, sig_id: str) -> tuple[np.ndarray, np.ndarray]:
        """One signal of one run (copies, read under the run's lock)."""
        run = self.runs.get(path)
        if run is None:
            return np.empty(0, np.int64), np.empty(0)
        with run.lock:
            ids, vals = signal_series(run.pipe.store.current, BY_ID[sig_id])
            return np.array(ids, copy=True), np.array(vals, dtype=float, copy=True)

    def with_store(self, path: str, fn: Callable):
        """Call fn(store) under the run's lock (the baseline reads its seeds this way)."""
        run = self.runs[path]
        with run.lock:
            return fn(run.pipe.store)

    def all_loaded(self) -> bool:
        with self._lock:
            return all(r.loaded for r in self.runs.values())

    def loaded(self, path: str) -> bool:
        run = self.runs.get(path)
        return bool(run and run.loaded)


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return -1


# ---------------------------------------------------------------------- a baseline from seed logs
BASELINE_CACHE = 8
_baseline_cache: OrderedDict = OrderedDict()
_baseline_lock = threading.Lock()


def _identity(path: str) -> tuple:
    try:
        st = os.stat(path)
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror or exc}") from None
    return (os.path.realpath(path), st.st_size, st.st_mtime_ns)


def load_baseline(paths: list[str], base: RangeSet | None = None) -> Baseline:
    """The baseline of these seed logs, read through the one pipeline (cached while the
    files do not change)."""
    if len(paths) < MIN_SEEDS:
        raise InputError(f"--baseline needs at least {MIN_SEEDS} seed runs of the same setup (got {len(paths)})")
    key = (tuple(_identity(p) for p in paths), id(base), getattr(base, "path", None))
    with _baseline_lock:
        hit = _baseline_cache.get(key)
        if hit is not None:
            _baseline_cache.move_to_end(key)
            return hit
    stores = [judge_path(p, judging=False).store for p in paths]
    got = from_stores(stores, [os.path.basename(p) for p in paths], base)
    with _baseline_lock:
        _baseline_cache[key] = got
        while len(_baseline_cache) > BASELINE_CACHE:
            _baseline_cache.popitem(last=False)
    return got


__all__ = [
    "EXIT",
    "RANK",
    "worst",
    "discover",
    "folder_logs",
    "display_names",
    "top_alert",
    "alert_words",
    "unknown_json",
    "RunResult",
    "judge_many",
    "RunRow",
    "RunSet",
    "load_baseline",
]
