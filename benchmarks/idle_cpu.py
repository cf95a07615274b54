#!/usr/bin/env python3
"""Idle CPU of `grpo-tui tail` on a quiet file, against GNU `tail -F` on the same file.

What it measures
    A realistic log (default sample_logs/healthy-seed1.log) is copied to a temp file.
    `grpo-tui tail FILE` is started on it (stdout drained by a thread) and, at the same
    time, GNU `tail -F FILE` (stdout to /dev/null) as the reference.  Once grpo-tui has
    printed the history and gone quiet for 1 s, the script waits --settle seconds (2), then
    reads utime+stime of each process from /proc/PID/stat (all threads included; ticks
    converted with os.sysconf('SC_CLK_TCK')) at the start and at the end of a --duration
    window (30 s; --quick 10 s), and prints CPU as % of one core.  It also sums
    voluntary + involuntary context switches over /proc/PID/task/*/status, i.e. roughly how
    often each process wakes up per second, and the thread count.

    Nothing is written to the file during the window, so this is the pure cost of
    following: the watcher, the periodic re-stat and tail's 1 s rule tick.

    --neighbour-hz N (default 0 = off) additionally appends one noise line N times a second
    to a *sibling* file in the same folder during the window (as Ray, W&B or a second job
    would): the followed file stays quiet, but a watcher on the folder sees every change.

Bar: grpo-tui tail <= 0.5 % of a core.

Usage
    python benchmarks/idle_cpu.py [--duration 30] [--settle 2] [--log FILE] [--quick]
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks._common import (
    HZ,
    REPO,
    cpu_ticks,
    ctx_switches,
    parse_args,
    start_tail,
    stop as _stop,
)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=30.0, help="sampling window in s (default 30)")
    ap.add_argument("--settle", type=float, default=2.0, help="wait after the history, s (default 2)")
    ap.add_argument("--log", default=str(REPO / "sample_logs" / "healthy-seed1.log"))
    ap.add_argument(
        "--neighbour-hz",
        type=float,
        default=0.0,
        help="appends per second to a sibling file during the window (default 0)",
    )
    args = parse_args(ap, "10 s window", "duration", 10.0)

    with tempfile.TemporaryDirectory(prefix="grpo-idle-") as d:
        path = os.path.join(d, "train.log")
        shutil.copyfile(args.log, path)
        size = os.path.getsize(path)
        out_state = {"lines": 0, "records": 0, "last": time.monotonic()}
        gt = start_tail(path, stderr=subprocess.DEVNULL)
        ref = subprocess.Popen(["tail", "-F", "-n", "+1", path], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        def drain() -> None:
            for raw in gt.stdout:
                out_state["lines"] += 1
                if raw.startswith(b'{"type": "record"'):
                    out_state["records"] += 1
                out_state["last"] = time.monotonic()

        threading.Thread(target=drain, daemon=True).start()
        try:
            t_start = time.monotonic()
            while time.monotonic() - t_start < 60:
                if out_state["records"] and time.monotonic() - out_state["last"] >= 1.0:
                    break
                if gt.poll() is not None:
                    raise SystemExit(f"grpo-tui tail exited early (rc {gt.returncode})")
                time.sleep(0.05)
            hist_s = out_state["last"] - t_start
            print(
                f"idle_cpu: log {os.path.basename(args.log)} ({size} bytes); grpo-tui tail printed "
                f"{out_state['lines']} lines ({out_state['records']} records) in ~{hist_s:.2f} s "
                f"incl. start-up"
            )
            time.sleep(args.settle)
            lines_before = out_state["lines"]
            c0 = {p.pid: cpu_ticks(p.pid) for p in (gt, ref)}
            s0 = {p.pid: ctx_switches(p.pid) for p in (gt, ref)}
            w0 = time.monotonic()
            if args.neighbour_hz > 0:
                nfd = os.open(os.path.join(d, "worker-neighbour.out"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
                k = 0
                while (nxt := w0 + k / args.neighbour_hz) < w0 + args.duration:
                    time.sleep(max(0.0, nxt - time.monotonic()))
                    os.write(nfd, b'(SGLangEngine pid=48100) INFO:     10.0.0.5:4711 - "GET /health HTTP/1.1" 200 OK\n')
                    k += 1
                os.close(nfd)
                time.sleep(max(0.0, w0 + args.duration - time.monotonic()))
            else:
                time.sleep(args.duration)
            wall = time.monotonic() - w0
            c1 = {p.pid: cpu_ticks(p.pid) for p in (gt, ref)}
            s1 = {p.pid: ctx_switches(p.pid) for p in (gt, ref)}
            printed = out_state["lines"] - lines_before
        finally:
            _stop(gt)
            _stop(ref, signal.SIGTERM)

    if args.neighbour_hz > 0:
        print(f"sibling file in the same folder appended {args.neighbour_hz:g} times/s during the window")
    print(
        f"window {wall:.1f} s after {args.settle:.0f} s settle, CLK_TCK={HZ} "
        f"(resolution {100 / HZ / wall:.3f} % of a core)"
    )
    res = {}
    for name, p in (("grpo-tui tail", gt), ("GNU tail -F (ref)", ref)):
        ticks = c1[p.pid] - c0[p.pid]
        pct = ticks / HZ / wall * 100
        wake = (s1[p.pid][0] - s0[p.pid][0]) / wall
        res[name] = pct
        print(
            f"{name:<20} cpu {ticks / HZ * 1000:7.0f} ms = {pct:6.3f} % of a core   "
            f"ctx switches {wake:7.1f}/s   threads {s1[p.pid][1]}"
        )
    a, b = res["grpo-tui tail"], res["GNU tail -F (ref)"]
    ratio = f"x{a / b:.1f}" if b > 0 else "ref below clock resolution"
    print(f"grpo-tui tail vs GNU tail -F: {ratio}; lines printed during the window: {printed}")
    if args.neighbour_hz > 0:
        print("(the bar is for a quiet folder; this run had a busy sibling file)")
    print(f"bar <= 0.5 % of a core: {'PASS' if a <= 0.5 else 'FAIL'} ({a:.3f} %)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
