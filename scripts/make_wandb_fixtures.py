"""Make the W&B offline fixtures (tests/fixtures/sidecars/wandb/) from sample logs with the real wandb.

Each sample log is read by grpo_tui's own parser, then written as W&B offline runs the way Miles
writes them (miles/utils/tracking_utils/wandb_utils.py): a primary process (the driver) opens the
run with the run's config and the step metrics Miles defines, logs nothing; then the train actor and
the rollout manager, two more processes, open the same id with resume="allow", each logging the
records its actor printed in the log (the ``[MegatronTrainRayActor ...]`` / ``[RolloutManager ...]``
prefix) as one row each, with the step key Miles adds: ``train/step`` to a step dict,
``rollout/step`` to rollout and perf dicts, ``eval/step`` to eval dicts.  Every process finishes
with exit code 1 for crashed.log, else 0.  Each process makes its own ``offline-run-*-<id>`` folder.

Only the .wandb files are kept.  Also writes ``cut/run-<id>.wandb``: the first train-actor file of
healthy-seed1 cut in the middle of a record.

Needs wandb (not a grpo-tui dependency), so run it with a scratch venv:

    python3 -m venv /tmp/wandb-venv && /tmp/wandb-venv/bin/pip install wandb
    /tmp/wandb-venv/bin/python scripts/make_wandb_fixtures.py [OUT]   # OUT: tests/fixtures/sidecars/wandb

Made with wandb 0.31.0.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# stalled.log too would take the fixtures over 2 MB (each run of 48 rollouts is ~350 KB)
SAMPLES = ("healthy-seed1", "gap-jump", "length-hacking", "no-signal", "non-finite", "crashed")
STEP_KEYS = {"step": "train/step", "eval": "eval/step"}  # every other kind: rollout/step


def run_id(sample: str) -> str:
    return "fx" + hashlib.sha1(sample.encode()).hexdigest()[:6]


def flag_value(value: object) -> object:
    """A launch flag as Miles' argparse would hold it."""
    if not isinstance(value, str):
        return value
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


def plan(sample: str) -> dict:
    """What each process logs for one sample log."""
    sys.path.insert(0, ROOT)
    from grpo_tui.lines.parse import LineParser
    from grpo_tui.lines.records import Event, MetricRecord

    with open(os.path.join(ROOT, "sample_logs", sample + ".log"), encoding="utf-8", errors="replace") as f:
        lines = f.read().splitlines()
    parser = LineParser()
    items = list(parser.feed_lines(lines)) + list(parser.flush())
    config: dict[str, object] = {}
    for item in items:
        if isinstance(item, Event) and item.kind == "launch":
            config = {k.replace("-", "_"): flag_value(v) for k, v in item.data.get("flags", {}).items()}
            break
    rows: dict[str, list[dict]] = {"train": [], "rollout": []}
    for item in items:
        if isinstance(item, MetricRecord):
            role = "rollout" if item.actor == "RolloutManager" else "train"
            row = {**item.metrics, STEP_KEYS.get(item.kind, "rollout/step"): item.n}
            if item.ts is not None:  # (when the line was logged: wandb stamps a live run's rows so)
                row["_timestamp"] = item.ts
            rows[role].append(row)
    return {
        "id": run_id(sample),
        "name": sample,
        "config": config,
        "rows": rows,
        "exit_code": 1 if sample == "crashed" else 0,
    }


def child(role: str, plan_path: str, out: str) -> None:
    """One process of the run (the driver, the train actor or the rollout manager)."""
    import wandb

    with open(plan_path) as f:
        p = json.load(f)
    common = {"id": p["id"], "project": "miles", "dir": out, "config": p["config"]}
    if role == "primary":
        wandb.init(name=p["name"], group=p["name"], settings=wandb.Settings(mode="offline"), **common)
    else:
        wandb.init(resume="allow", reinit=True, settings=wandb.Settings(mode="offline"), **common)
    for prefix, step in (
        ("train", "train"),
        ("rollout", "rollout"),
        ("multi_turn", "rollout"),
        ("passrate", "rollout"),
        ("eval", "eval"),
        ("perf", "rollout"),
    ):
        if prefix == step:
            wandb.define_metric(f"{step}/step")
        wandb.define_metric(f"{prefix}/*", step_metric=f"{step}/step")
    for row in p["rows"].get(role, []):
        wandb.log(row)
    wandb.finish(exit_code=p["exit_code"])


def next_second() -> None:
    """Wait for the clock's next second: a run folder's name holds its start time to the second."""
    time.sleep(1.05 - time.time() % 1)


def make(sample: str, dest: str) -> None:
    p = plan(sample)
    with tempfile.TemporaryDirectory() as tmp:
        plan_path = os.path.join(tmp, "plan.json")
        with open(plan_path, "w") as f:
            json.dump(p, f)
        env = dict(os.environ, WANDB_MODE="offline", WANDB_DIR=tmp, WANDB_SILENT="true")
        for role in ("primary", "train", "rollout"):
            next_second()
            subprocess.run([sys.executable, __file__, "--child", role, plan_path, tmp], env=env, check=True)
        shutil.rmtree(os.path.join(dest, sample), ignore_errors=True)
        top = os.path.join(tmp, "wandb")
        for name in sorted(os.listdir(top)):
            folder = os.path.join(top, name)
            if name.startswith("offline-run-") and not os.path.islink(folder):
                for file in os.listdir(folder):
                    if file.endswith(".wandb"):
                        os.makedirs(os.path.join(dest, sample, "wandb", name), exist_ok=True)
                        shutil.copy(os.path.join(folder, file), os.path.join(dest, sample, "wandb", name, file))


def make_cut(dest: str) -> None:
    """healthy-seed1's train-actor file cut inside a record (the first record crossing 40,000 bytes)."""
    top = os.path.join(dest, "healthy-seed1", "wandb")
    sizes = []
    for name in sorted(os.listdir(top)):
        for file in os.listdir(os.path.join(top, name)):
            path = os.path.join(top, name, file)
            sizes.append((os.path.getsize(path), path))
    path = max(sizes)[1]  # the largest: the train actor logs most rows
    with open(path, "rb") as f:
        data = f.read(40_000)
    os.makedirs(os.path.join(dest, "cut"), exist_ok=True)
    with open(os.path.join(dest, "cut", os.path.basename(path)), "wb") as f:
        f.write(data)


def main(argv: list[str]) -> None:
    if argv[:1] == ["--child"]:
        child(*argv[1:4])
        return
    dest = argv[0] if argv else os.path.join(ROOT, "tests", "fixtures", "sidecars", "wandb")
    for sample in SAMPLES:
        make(sample, dest)
        print(sample, "done")
    make_cut(dest)


if __name__ == "__main__":
    main(sys.argv[1:])
