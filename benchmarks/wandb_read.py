"""Read a big W&B offline run (.wandb) vs `wc -c` and `grep -c` on the same file, same run.

Writes (or takes) a .wandb file shaped like a Miles run's: per rollout the rows Miles logs (the
rollout dict, two step dicts, the train actor's and the rollout manager's perf dicts: 5 rows, 71
keys, those of healthy-seed1's fixture), each as wandb 0.31 writes a `log()`: a history record and a summary
record, values as 17-digit floats (random: the time is the same for any).  The file is made by the test writer
(tests/unit/sidecar/wandb_write.py, checked byte for byte against files real wandb made), so no
wandb is needed.  Then times, each in its own process:
  reference: wc -c FILE; grep -c train/grad_norm FILE
  ours:      WandbFileTail(FILE).read()  (every record decoded, every value JSON-decoded)

    python benchmarks/wandb_read.py                    # 10,000 rollouts into /tmp/grpo_bench.wandb
    python benchmarks/wandb_read.py --rollouts 2000 --file /tmp/small.wandb
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.unit.sidecar import wandb_write as ww  # noqa: E402

FIXTURE = ROOT / "tests" / "fixtures" / "sidecars" / "wandb" / "healthy-seed1"
STEP_KEYS = ("rollout/step", "train/step")


def rollout_shape() -> list[tuple[str, list[str]]]:
    """The rows Miles logs for one rollout, as (step key, metric keys): those of rollout 0 in the
    healthy-seed1 fixture (wandb's own _step, _runtime and _timestamp left out)."""
    from grpo_tui.sidecar.wandb_offline import WandbFileTail, find_wandb_runs

    shape = []
    for path in next(iter(find_wandb_runs(str(FIXTURE)).values())):
        for kind, row in WandbFileTail(path).read():
            step_key = next((k for k in STEP_KEYS if k in row), None)
            if kind == "history" and step_key and row[step_key] == 0:
                shape.append((step_key, [k for k in row if not k.startswith("_") and k not in STEP_KEYS]))
    return shape


_CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, sys.argv[2])
from grpo_tui.sidecar.wandb_offline import WandbFileTail
t, c0 = time.perf_counter(), time.process_time()
tail = WandbFileTail(sys.argv[1])
records = tail.read()
dt, cpu = time.perf_counter() - t, time.process_time() - c0
print(json.dumps({"seconds": dt, "cpu": cpu, "records": len(records),
                  "history": sum(k == "history" for k, _ in records),
                  "values": sum(len(d) for k, d in records if k == "history"),
                  "problems": sum(tail.problems.values()),
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def make(path: str, rollouts: int) -> None:
    rand = random.Random(0)
    shape = rollout_shape()
    t0 = 1_787_000_000.0

    def records():
        step = 0
        for n in range(rollouts):
            for step_key, keys in shape:
                row = {**{k: rand.random() * 1000 for k in keys}, step_key: n}
                extra = {"_timestamp": t0 + step * 20.123456, "_runtime": step * 20.123456789, "_step": step}
                yield ww.history({**row, **extra}, step=step, num=2 * step + 20)
                yield ww.summary({**row, **extra}, num=2 * step + 21)
                step += 1

    data = ww.write_log(
        [ww.run("bench1", {"rollout_batch_size": 32, "n_samples_per_prompt": 8}), *records(), ww.exit_record(0)]
    )
    with open(path, "wb") as f:
        f.write(data)


def timed(cmd: str) -> tuple[float, str]:
    t = time.perf_counter()
    out = subprocess.run(cmd, shell=True, capture_output=True, text=True, check=False).stdout.strip()
    return time.perf_counter() - t, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--file", default="/tmp/grpo_bench.wandb")
    ap.add_argument("--rollouts", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3, help="runs of each (best is kept)")
    a = ap.parse_args()
    if not os.path.exists(a.file):
        print(f"writing {a.file} ({a.rollouts} rollouts)...", flush=True)
        make(a.file, a.rollouts)
    size = os.path.getsize(a.file)
    subprocess.run(["cat", a.file], stdout=subprocess.DEVNULL, check=True)  # warm the page cache
    wc = min(timed(f"wc -c '{a.file}'") for _ in range(a.repeat))
    grep = min(timed(f"grep -c train/grad_norm '{a.file}'") for _ in range(a.repeat))
    ours = min(
        (
            json.loads(
                subprocess.run(
                    [sys.executable, "-c", _CHILD, a.file, str(ROOT)], capture_output=True, text=True, check=True
                ).stdout
            )
            for _ in range(a.repeat)
        ),
        key=lambda r: r["seconds"],
    )
    print(f"file: {a.file}, {size / 1e6:.1f} MB")
    print(f"wc -c:                {wc[0]:.3f} s")
    print(f"grep -c:              {grep[0]:.3f} s ({grep[1]} lines)")
    print(
        f"WandbFileTail.read(): {ours['seconds']:.3f} s wall, {ours['cpu']:.3f} s CPU, {ours['records']} records, "
        f"{ours['history']} history rows, {ours['values']} values, {ours['problems']} problems, peak RSS {ours['peak_rss_mb']:.0f} MB"
    )


if __name__ == "__main__":
    main()
