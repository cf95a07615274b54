"""`grpo-tui check` of one run three ways: its console log, its TensorBoard folder, its W&B offline run.

A simulated Miles run of --rollouts rollouts is written as a console log, then as Miles' backends would
write the same dicts: a TensorBoard folder (one events file per process, one event per scalar) and a W&B
offline run (one folder per process, one history row per log call, with `_timestamp`). Each is checked in
a fresh process (best of --repeat, interleaved), against `grep -c` of one metric on the same bytes in the
same round. The verdicts must agree (the console-only rules aside).

    .venv/bin/python benchmarks/sidecar_check.py --rollouts 10000
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from grpo_tui.simulate import write_log
from tests.e2e.test_sidecar_parity import _records, write_tensorboard
from tests.unit.sidecar import wandb_write as ww


def write_wandb(log: Path, out: Path) -> None:
    """The train actor's and the rollout manager's rows, each process its own offline-run folder."""
    rows: dict[str, list[dict]] = {"train": [], "rm": []}
    for rec in _records(log):
        rm = rec.kind == "perf" and any(k.startswith("rollout/") for k in rec.metrics)
        key = "train/step" if rec.kind == "step" else "rollout/step"
        row = {**rec.metrics, key: rec.n, "_timestamp": rec.ts or 0.0}
        rows["rm" if rm else "train"].append(row)
    for i, got in enumerate(rows.values()):
        folder = out / "wandb" / f"offline-run-20260821_09500{i}-bench"
        folder.mkdir(parents=True)
        payloads = [ww.run("bench", {"rollout_batch_size": 32, "n_samples_per_prompt": 8})]
        payloads += [ww.history(row, step=n, num=n + 2) for n, row in enumerate(got)]
        payloads.append(ww.exit_record(0))
        (folder / "run-bench.wandb").write_bytes(ww.write_log(payloads))


def timed(argv: list[str]) -> tuple[float, str]:
    t = time.perf_counter()
    r = subprocess.run(argv, capture_output=True, text=True)
    return time.perf_counter() - t, r.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rollouts", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="grpo-sidecar-"))
    log = work / "run.log"
    write_log(str(log), "gap-jump", args.rollouts, 1)
    write_tensorboard(log, work / "tb")
    write_wandb(log, work / "wb")
    inputs = {"log": log, "tensorboard": work / "tb", "wandb": work / "wb"}
    size = {
        k: sum(f.stat().st_size for f in ([p] if p.is_file() else p.rglob("*")) if f.is_file())
        for k, p in inputs.items()
    }
    best: dict[str, float] = {}
    grep: dict[str, float] = {}
    verdicts: dict[str, list] = {}
    cli = [sys.executable, "-m", "grpo_tui", "check", "--json"]
    for _ in range(args.repeat):
        for name, path in inputs.items():
            t, out = timed(cli + [str(path)])
            best[name] = min(best.get(name, t), t)
            obj = json.loads(out)
            verdicts[name] = sorted((a["rule"], a["severity"], a["rollout"]) for a in obj["alerts"])
            files = [str(f) for f in ([path] if path.is_file() else path.rglob("*")) if f.is_file()]
            g, _ = timed(["grep", "-c", "-a", "raw_reward", *files])
            grep[name] = min(grep.get(name, g), g)
    print(f"{args.rollouts} rollouts (gap-jump), best of {args.repeat}:")
    for name in inputs:
        print(
            f"  {name:<12} {size[name] / 2**20:7.1f} MB  check {best[name]:.2f} s  "
            f"grep -c {grep[name]:.3f} s  ({best[name] / grep[name]:.0f}x)"
        )
    console_only = {"crashed", "engine-down", "stalled", "no-steps"}
    want = [a for a in verdicts["log"] if a[0] not in console_only]
    for name in ("tensorboard", "wandb"):
        got = [a for a in verdicts[name] if a[0] not in console_only]
        print(f"  {name} alerts {'equal the log' if got == want else 'DIFFER: ' + str(got[:4])}")
    os.system(f"rm -rf {work}")


if __name__ == "__main__":
    main()
