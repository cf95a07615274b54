#!/usr/bin/env python3
"""Many runs against one: what the runs overview's reader costs (figures, never a pass/fail).

What it measures
    N copies of a sample log (default 20 x sample_logs/healthy-seed1.log, mtimes set an hour
    back so every run reads as finished) in a temp folder, then:
    - `check` of one file (judge_path) and of all N (judge_many): seconds, and the ratio to
      N x one (the multi-run path adds nothing per run);
    - RunSet.load_all(): the overview's first pass over the N histories, and its ratio to
      judge_many (the follower's chunked reads against one read per file);
    - the idle pass (nothing written): ms of CPU per pass over N runs, i.e. the reader's cost
      per second while nothing grows;
    - one run growing by one rollout per pass: ms of CPU per pass.
    Every figure is the best of --repeat runs (CPU time of this process).

Usage
    python benchmarks/many_runs.py [--runs 20] [--log FILE] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

from grpo_tui.pipeline import judge_path
from grpo_tui.runs import RunSet, judge_many

ROOT = Path(__file__).resolve().parents[1]


def cpu(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.process_time()
        fn()
        best = min(best, time.process_time() - t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--log", default=str(ROOT / "sample_logs" / "healthy-seed1.log"))
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="grpo-many-"))
    try:
        old = time.time() - 3600
        paths = []
        for i in range(a.runs):
            p = folder / f"run{i:03d}.log"
            shutil.copy(a.log, p)
            os.utime(p, (old, old))
            paths.append(str(p))
        one = cpu(lambda: judge_path(paths[0]), a.repeat)
        many = cpu(lambda: judge_many(paths), a.repeat)
        print(f"check 1 run          {one:7.3f} s CPU")
        print(f"check {a.runs} runs        {many:7.3f} s CPU   ({many / (a.runs * one):.2f} x {a.runs} x one)")
        holder = {}

        def load() -> None:
            rs = RunSet([str(folder)])
            rs.load_all()
            holder["rs"] = rs

        first = cpu(load, a.repeat)
        print(f"overview first pass  {first:7.3f} s CPU   ({first / many:.2f} x check of all)")
        rs = holder["rs"]
        idle = cpu(lambda: [rs.pass_once() for _ in range(20)], a.repeat) / 20
        print(f"idle pass            {idle * 1000:7.2f} ms CPU  (every second while nothing grows)")
        src = Path(a.log).read_bytes()
        chunks = src.split(b"rollout ")
        grow = folder / "grow.log"
        grow.write_bytes(chunks[0])
        rs.rescan()
        rs.load_all()
        t = time.process_time()
        for c in chunks[1:21]:
            with open(grow, "ab") as fh:
                fh.write(b"rollout " + c)
            rs.pass_once()
        per = (time.process_time() - t) / 20
        print(f"pass with one run growing one rollout {per * 1000:7.2f} ms CPU")
        rs.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
