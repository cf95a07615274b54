#!/usr/bin/env python3
"""Time to first paint of the dashboard on a ~1 GB log, in a real terminal (tmux) and in-process.

What it measures
    tmux: `grpo-tui FILE` is started in a detached tmux session of each size (80x24,
    200x50); `tmux capture-pane -p` is polled every 20 ms.
      first paint = launch -> the screen shows all nine signal labels, each with a value
                    (a number in its row after the label);
      history     = launch -> the header no longer says "loading N%" (the whole file
                    parsed in the background and handed over); first run of each size only.
    in-process: GrpoApp(FILE) under App.run_test(size); time from constructing the app
      to the first refresh_view() that has rollouts (imports excluded; import time of
      grpo_tui.ui.app is printed separately, in a fresh interpreter).

Output
    Seconds per size, and the in-process figures.  Bar (issue tracker): first paint <= 1 s.

Usage
    python benchmarks/ui_first_paint.py [--file /tmp/grpo_bench_1g.log] [--runs 3]
    (the file is made with benchmarks/make_big_log.py if missing; it is never deleted)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from grpo_tui.judge.signals import SIGNALS  # noqa: E402

LABELS = [s.label[:14] for s in SIGNALS]  # as the rows show them (LABEL_W = 14)
_NUM = re.compile(r"(?<![\w.])-?\d+(\.\d+)?(e[-+]?\d+)?(?![\w])")
_LOADING = re.compile(r"\bloading \d+ ?%")  # the header while the history loads (app.py: `loading 43%`)


def grpo_tui_cmd() -> list[str]:
    exe = Path(sys.executable).with_name("grpo-tui")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "grpo_tui"]


def nine_with_values(screen: str) -> bool:
    lines = screen.splitlines()
    for label in LABELS:
        row = next((ln for ln in lines if ln.startswith(label)), None)
        if row is None or not _NUM.search(row[len(label) :]):
            return False
    return True


def capture(session: str) -> str:
    return subprocess.run(["tmux", "capture-pane", "-p", "-t", session], capture_output=True, text=True).stdout


def tmux_run(
    path: str, w: int, h: int, history: bool = True, timeout: float = 180.0
) -> tuple[float | None, float | None, str]:
    session = f"grpo-paint-{os.getpid()}-{w}x{h}"
    subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
    cmd = " ".join(grpo_tui_cmd()) + f" {path}"
    t0 = time.perf_counter()
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", str(w), "-y", str(h), cmd], check=True)
    first = hist = None
    screen = ""
    first_screen = ""
    try:
        while time.perf_counter() - t0 < timeout:
            screen = capture(session)
            now = time.perf_counter() - t0
            if first is None and nine_with_values(screen):
                first = now
                first_screen = screen
                if not history:
                    break
            if first is not None and not _LOADING.search(screen.splitlines()[0]):
                hist = now
                break
            time.sleep(0.02)
    finally:
        subprocess.run(["tmux", "send-keys", "-t", session, "q"], capture_output=True)
        time.sleep(0.3)
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
    return first, hist, first_screen or screen


async def in_process(path: str, size: tuple[int, int]) -> tuple[float | None, float | None]:
    from grpo_tui.ui.app import GrpoApp

    t0 = time.perf_counter()
    app = GrpoApp(path, live=True)
    got: dict[str, float] = {}
    orig = app.refresh_view

    def timed() -> None:
        orig()
        if "first" not in got and app.feed.store.current.ids:
            got["first"] = time.perf_counter() - t0
        if "first" in got and "hist" not in got and app.loading is None:
            got["hist"] = time.perf_counter() - t0

    app.refresh_view = timed
    async with app.run_test(size=size) as pilot:
        end = time.monotonic() + 120
        while "hist" not in got and time.monotonic() < end:
            await pilot.pause(0.02)
    return got.get("first"), got.get("hist")


def import_time() -> float:
    code = "import time; t=time.perf_counter(); import grpo_tui.ui.app; print(time.perf_counter()-t)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    return float(out.stdout.strip() or "nan")


def fmt(x: float | None) -> str:
    return "timeout" if x is None else f"{x:.2f} s"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--file", default="/tmp/grpo_bench_1g.log")
    ap.add_argument("--runs", type=int, default=3, help="tmux launches per size (median)")
    ap.add_argument("--show", action="store_true", help="print the first painted screen")
    args = ap.parse_args()
    if not os.path.exists(args.file):
        from benchmarks.make_big_log import make

        print(f"writing {args.file} ...", flush=True)
        make(args.file, 1 << 30)
    size = os.path.getsize(args.file)
    print(f"file {args.file}: {size / 1e9:.2f} GB")
    print(f"import grpo_tui.ui.app (fresh interpreter): {import_time():.2f} s")
    ok = True
    if shutil.which("tmux"):
        for w, h in ((80, 24), (200, 50)):
            firsts, hists = [], []
            shown = ""
            for i in range(args.runs):
                f, hi, shown = tmux_run(args.file, w, h, history=i == 0)  # history time: 1st run
                firsts.append(f if f is not None else float("inf"))
                if i == 0:
                    hists.append(hi if hi is not None else float("inf"))
            f, hi = statistics.median(firsts), hists[0]
            ok &= f <= 1.0
            print(
                f"tmux {w}x{h}: first paint {fmt(f if f != float('inf') else None)} "
                f"(runs: {', '.join(f'{x:.2f}' for x in firsts)})   "
                f"history loaded {fmt(hi if hi != float('inf') else None)}"
            )
            if args.show:
                print(shown)
    else:
        print("tmux not found: terminal figures skipped")
    for w, h in ((80, 24), (200, 50)):
        f, hi = asyncio.run(in_process(args.file, (w, h)))
        print(f"in-process run_test {w}x{h}: first refresh with data {fmt(f)}   history loaded {fmt(hi)}")
    print(f"bar: first paint <= 1 s in tmux: {'PASS' if ok else 'FAIL'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
