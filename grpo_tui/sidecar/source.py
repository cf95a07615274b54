"""A run's metric files as one input: a TensorBoard event folder or a W&B offline run.

`open_sidecar(path)` recognises either by what the path holds; `read()` gives the records and events
that are ready, in the order they were logged (assemble.Merger), for Pipeline.feed_items. Every file
is tailed on its own from its own offset, and files that appear later are picked up, so reading again
and again follows a live run; `read(final=True)` at the end of a finished input releases the rest.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from .assemble import (
    SPLIT_GAP,
    Merger,
    Row,
    config_events,
    exit_event,
    framework_of,
    history_row,
    record_of,
    tensorboard_rows,
)

QUIET_AFTER = 180.0  # s: a file silent this long (its mtime) no longer holds the others back
SETTLED_AFTER = 10.0  # s: a file unchanged this long ends with a whole log call (its last row is let go)


class SidecarError(ValueError):
    """The path holds metric files that cannot be read as one run (said in one line)."""


@dataclass(frozen=True, slots=True)
class InputKind:
    name: str  # tensorboard | wandb
    label: str  # what the header and `check` call it
    lag: str  # how late its writer puts data on disk
    # the rules that read the console and cannot be judged from this input (a W&B exit record
    # stands in for the console's job line, so `crashed` is judged there)
    unjudged: tuple[str, ...]
    says_finished: bool  # it records the run's end (else a long silence is only a warning)


TENSORBOARD = InputKind(
    "tensorboard",
    "TensorBoard",
    "written every 2 min",
    ("crashed", "engine-down", "no-steps"),
    False,
)
WANDB = InputKind(
    "wandb",
    "W&B offline",
    "written every 15 s (in 32 KiB blocks before wandb 0.31)",
    ("engine-down", "no-steps"),
    True,
)


class Sidecar:
    """One run's metric files, read incrementally."""

    kind: InputKind

    def __init__(self, path: str) -> None:
        self.path = path
        self.merger = Merger()
        self.framework: str | None = None
        self._held: dict[str, Row] = {}  # file -> its last row, which the next read may continue
        self.problems: dict[str, int] = {}

    # -- what subclasses give
    def files(self) -> list[str]:
        raise NotImplementedError

    def _read_files(self) -> None:
        raise NotImplementedError

    # -- reading
    def read(self, final: bool = False) -> list:
        """The records and events ready now (all of them when `final`)."""
        self._read_files()
        quiet = self._quiet_files(QUIET_AFTER)
        settled = self._quiet_files(SETTLED_AFTER)
        for src in list(self._held) if final else [s for s in self._held if s in settled]:
            self._emit(src, [self._held.pop(src)])
        every_quiet = bool(self.files()) and len(quiet) >= len(self.files())
        return self.merger.release(final=final or every_quiet or self.ended(), quiet=quiet)

    def ended(self) -> bool:
        """The input says the run is over (nothing more will come to wait for)."""
        return False

    def written_at(self) -> float | None:
        """The newest mtime of its files: when the run last wrote (None: no file yet)."""
        times = [_mtime(f) for f in self.files()]
        known = [t for t in times if t is not None]
        return max(known) if known else None

    def _quiet_files(self, after: float) -> set[str]:
        """The files not written for `after` seconds."""
        import time

        now = time.time()
        return {f for f in self.files() if (t := _mtime(f)) is not None and now - t > after}

    def _rows(self, src: str, rows: list[Row]) -> None:
        """A file's new rows: the first may continue the one held back, the last is held back."""
        if not rows:
            return
        held = self._held.pop(src, None)
        if held is not None:
            first = rows[0]
            if (
                first.axis == held.axis
                and first.step == held.step
                and held.ts is not None
                and first.ts is not None
                and abs(first.ts - held.ts) <= SPLIT_GAP
                and self.kind is TENSORBOARD
            ):
                held.values.update(first.values)
                held.has_perf = held.has_perf or first.has_perf
                rows = [held] + rows[1:]
            else:
                rows = [held] + rows
        if self.kind is TENSORBOARD:
            self._held[src] = rows.pop()
        self._emit(src, rows)

    def _emit(self, src: str, rows: list[Row]) -> None:
        if self.framework is None and rows:
            keys: set[str] = set()
            for r in rows:
                keys.update(r.values)
            self.framework = framework_of(keys)
        items = [rec for rec in (record_of(r, self.framework or "miles") for r in rows) if rec is not None]
        newest = max((r.ts for r in rows if r.ts is not None), default=None)
        self.merger.add(src, items, newest)

    def _count(self, problems: dict[str, int]) -> None:
        for k, v in problems.items():
            if v:
                self.problems[k] = v


class TensorBoardRun(Sidecar):
    kind = TENSORBOARD

    def __init__(self, path: str, folder: str) -> None:
        super().__init__(path)
        from .tensorboard import EventsFolderTail

        self.tail = EventsFolderTail(folder)

    def files(self) -> list[str]:
        return list(self.tail.files)

    def _read_files(self) -> None:
        for path, sc in self.tail.read():
            if len(sc):
                self._rows(
                    path, tensorboard_rows(os.path.basename(path), sc.tags, sc.tag_ids, sc.steps, sc.wall, sc.values)
                )
        self._count(self.tail.problems)


class WandbRun(Sidecar):
    kind = WANDB

    def __init__(self, path: str, root: str, run_id: str) -> None:
        super().__init__(path)
        from .wandb_offline import WandbRunTail

        self.tail = WandbRunTail(root, run_id)
        self.exits: dict[str, int] = {}
        self._told_exit = False

    def files(self) -> list[str]:
        return list(self.tail.files)

    def _read_files(self) -> None:
        for path, records in self.tail.read():
            src = os.path.basename(os.path.dirname(path)) or path
            rows: list[Row] = []
            events = []
            for kind, data in records:
                if kind == "history":
                    rows.append(history_row(src, data))
                elif kind in ("config", "run"):  # (settings, not points in time: no clock of theirs)
                    events.extend(config_events(data if kind == "config" else data.get("config") or {}, None))
                elif kind == "exit":
                    code = data.get("exit_code")
                    self.exits[path] = code if isinstance(code, int) else 1
            if events:
                self.merger.add(path, events, None)
            self._rows(path, rows)  # (keyed by the file, as quiet files are; `src` names its process)
        self._count(self.tail.problems)
        self._exit_events()

    def ended(self) -> bool:
        """A process failed, or every one exited: the rest of the records are all there."""
        return self._told_exit

    def _exit_events(self) -> None:
        """A failed process fails the run at once; the run finished when every file says so."""
        if self._told_exit or not self.exits:
            return
        failed = [(p, c) for p, c in self.exits.items() if c != 0]
        if failed:
            path, code = failed[0]
        elif len(self.exits) >= len(self.files()):
            path, code = next(iter(self.exits.items()))
        else:
            return
        self._told_exit = True
        src = os.path.basename(os.path.dirname(path)) or path
        ts = max(self.merger.newest.values(), default=None)
        self.merger.add("\x00exit", [exit_event(code, ts, src)], None)


def open_sidecar(path: str) -> Sidecar | None:
    """The run whose metric files `path` holds (a TensorBoard event folder, a W&B offline run or a
    folder holding one), or None when it holds none. SidecarError when it holds several runs."""
    isdir = os.path.isdir(path)
    if not (isdir or path.endswith(".wandb")) or path == "-":
        return None  # (a log: nothing imported, nothing listed)
    if isdir and _holds_logs(path):
        return None  # a folder of logs (a TensorBoard folder beside them is theirs, not the input)
    if isdir:
        from .tensorboard import events_files, find_event_folders

        folders = [path] if events_files(path) else find_event_folders(path)
        if len(folders) == 1:
            return TensorBoardRun(path, folders[0])
        if len(folders) > 1:
            names = ", ".join(os.path.relpath(f, path) for f in folders[:4])
            raise SidecarError(f"{path}: holds {len(folders)} TensorBoard runs ({names}); give one of them")
    from .wandb_offline import find_wandb_runs

    runs = find_wandb_runs(path)
    if len(runs) == 1:
        run_id, files = next(iter(runs.items()))
        # (the folder holding the run's offline-run-* folders: wandb/offline-run-X/run-X.wandb)
        return WandbRun(path, os.path.dirname(os.path.dirname(os.path.abspath(files[0]))), run_id)
    if len(runs) > 1:
        raise SidecarError(f"{path}: holds {len(runs)} W&B runs ({', '.join(sorted(runs)[:4])}); give one of them")
    return None


def run_paths(folder: str) -> list[str]:
    """The metric-file runs in a folder, each as a path open_sidecar reads as that one run: its
    TensorBoard folders, and for each W&B run id the first of its offline-run folders. [] for a
    folder of logs or one with no metric files."""
    if not os.path.isdir(folder) or _holds_logs(folder):
        return []
    from .tensorboard import events_files, find_event_folders
    from .wandb_offline import find_wandb_runs

    out = [folder] if events_files(folder) else find_event_folders(folder)
    for files in find_wandb_runs(folder).values():
        first = os.path.dirname(sorted(files)[0])
        out.append(first if first != folder.rstrip(os.sep) else folder)
    return sorted(set(out))


def _holds_logs(folder: str) -> bool:
    try:
        with os.scandir(folder) as it:
            return any(e.name.endswith((".log", ".jsonl")) for e in it)
    except OSError:
        return False


def _mtime(path: str) -> float | None:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return None
