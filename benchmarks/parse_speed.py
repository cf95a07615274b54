"""Full parse of a big realistic log vs `grep -o` for one metric, on the same file, same run.

Writes (or takes) a ~1 GB Miles log with ~97 % noise lines, then times:
  reference: grep -o "'rollout/raw_reward': [0-9.]*" FILE | wc -l
  ours:      grpo_tui.pipeline.judge_path(FILE, judging=False)  (every metric record and event, into the store)
and prints both, their ratio, and the parse's peak RSS (it streams in bounded memory).

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
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.make_big_log import make  # noqa: E402

_CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, sys.argv[2])
from grpo_tui.pipeline import judge_path
t = time.perf_counter()
loaded = judge_path(sys.argv[1], judging=False)
dt = time.perf_counter() - t
c = loaded.parser.counts
print(json.dumps({"seconds": dt, "lines": c.lines, "records": c.records, "events": c.event_lines,
                  "noise": c.noise, "unreadable": c.unreadable,
                  "rollouts": sum(len(s.ids) for s in loaded.store.segments),
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def time_grep(path: str) -> tuple[float, int]:
    t = time.perf_counter()
    out = subprocess.run(f"grep -o \"'rollout/raw_reward': [0-9.]*\" '{path}' | wc -l", shell=True,
                         capture_output=True, text=True, check=True).stdout
    return time.perf_counter() - t, int(out.strip())


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
    r = subprocess.run([sys.executable, "-c", _CHILD, a.file, str(ROOT)], capture_output=True, text=True,
                       check=True)
    ours = json.loads(r.stdout)
    metric_lines = ours["records"]
    print(f"file: {a.file}  {size / 1e6:.0f} MB, {ours['lines']:,} lines, "
          f"{100 * ours['noise'] / max(1, ours['lines']):.1f} % noise")
    print(f"grep -o raw_reward:  {grep_s:7.2f} s  ({grep_hits:,} matches)")
    print(f"grpo-tui full parse: {ours['seconds']:7.2f} s  ({metric_lines:,} records, {ours['events']:,} event lines,"
          f" {ours['rollouts']:,} rollouts, {ours['unreadable']} unreadable)")
    print(f"ratio parse/grep:    {ours['seconds'] / grep_s:7.1f} x   (bar <= 2.0, goal <= 1.0)")
    print(f"parse throughput:    {size / 1e6 / ours['seconds']:7.1f} MB/s; peak RSS {ours['peak_rss_mb']:.0f} MB (bar < 200)")


if __name__ == "__main__":
    main()
