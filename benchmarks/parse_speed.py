"""Full parse of a big realistic log vs `grep -o` for one metric, on the same file, same run.

Writes (or takes) a ~1 GB Miles log with ~97 % noise lines, then times:
  reference: grep -o "'rollout/raw_reward': [0-9.]*" FILE | wc -l
  ours:      grpo_tui.pipeline.judge_path(FILE, judging=False)  (every metric record and event, into the store)
and prints grep's time and the parse's (wall, and the process's CPU time: on a shared machine the
steadier figure), accelerated (the C scanner grpo_tui/lines/_scan.c,
when built: a bytes path, see grpo_tui/lines/parse.py) and pure (GRPO_TUI_PURE=1), each in its own process with its peak RSS (it streams in
bounded memory).

    python benchmarks/parse_speed.py                 # makes /tmp/grpo_bench_1g.log if missing
    python benchmarks/parse_speed.py --file big.log
    python benchmarks/parse_speed.py --size-mb 200   # a smaller file, same shape
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._common import time_grep  # noqa: E402
from benchmarks.make_big_log import make  # noqa: E402

_CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, sys.argv[2])
from grpo_tui.lines.native import SCAN
from grpo_tui.pipeline import judge_path
t, c0 = time.perf_counter(), time.process_time()
loaded = judge_path(sys.argv[1], judging=False)
dt, cpu = time.perf_counter() - t, time.process_time() - c0
c = loaded.parser.counts
print(json.dumps({"accel": SCAN is not None, "seconds": dt, "cpu": cpu, "lines": c.lines, "records": c.records, "events": c.event_lines,
                  "noise": c.noise, "unreadable": c.unreadable,
                  "rollouts": sum(len(s.ids) for s in loaded.store.segments),
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--file", default="/tmp/grpo_bench_1g.log")
    ap.add_argument("--size-mb", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=2, help="grep runs (best is kept)")
    a = ap.parse_args()
    if not os.path.exists(a.file):
        print(f"writing {a.file} ({a.size_mb} MB)...", flush=True)
        make(a.file, a.size_mb * 1_000_000)
    size = os.path.getsize(a.file)
    subprocess.run(["cat", a.file], stdout=subprocess.DEVNULL, check=True)  # warm the page cache
    grep_s, grep_hits = min(time_grep(a.file) for _ in range(a.repeat))
    runs = {}
    for mode, pure in (("accelerated", "0"), ("pure", "1")):
        env = dict(os.environ, GRPO_TUI_PURE=pure)
        r = subprocess.run(
            [sys.executable, "-c", _CHILD, a.file, str(ROOT)], capture_output=True, text=True, check=True, env=env
        )
        runs[mode] = json.loads(r.stdout)
    ours = runs["pure"]
    print(
        f"file: {a.file}  {size / 1e6:.0f} MB, {ours['lines']:,} lines, "
        f"{100 * ours['noise'] / max(1, ours['lines']):.1f} % noise"
    )
    print(f"grep -o raw_reward:  {grep_s:7.2f} s  ({grep_hits:,} matches)")
    for mode, r in runs.items():
        if mode == "accelerated" and not r["accel"]:
            print(
                "accelerated:         (not built: grpo_tui.lines._scan is missing; pip install -e . with a C compiler)"
            )
            continue
        print(
            f"{mode + ':':<20} {r['seconds']:7.2f} s  (CPU {r['cpu']:.2f} s; {r['records']:,} records, {r['events']:,} event lines,"
            f" {r['rollouts']:,} rollouts, {r['unreadable']} unreadable)"
        )
        print(
            f"  ratio parse/grep:  {r['seconds'] / grep_s:7.1f} x   (bar <= 2.0, goal <= 1.0); "
            f"{size / 1e6 / r['seconds']:.1f} MB/s; peak RSS {r['peak_rss_mb']:.0f} MB (bar < 200)"
        )
    acc = runs["accelerated"]
    if acc["accel"]:
        same = all(acc[k] == ours[k] for k in ("lines", "records", "events", "noise", "unreadable", "rollouts"))
        print(f"speed-up accelerated vs pure: {ours['seconds'] / acc['seconds']:.1f} x; same counts: {same}")


if __name__ == "__main__":
    main()
