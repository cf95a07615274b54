"""Make the TensorBoard fixtures of tests/unit/sidecar/ with the real writer (tensorboardX), from sample logs.

Each sample log is parsed with grpo_tui's own LineParser and written as Miles' `_TensorboardAdapter` leaves
it: one SummaryWriter per process in one folder (the driver's, empty; the train actor's: its `rollout N:`,
`step N:` and `perf N:` records; the rollout manager's: its `perf N:` records), `add_scalar(key,
float(value), global_step=N, walltime=console time)` per numeric key in console order, the step key
itself left out (`train/step`, `rollout/step`), Megatron's second print of a step skipped. Also:
`tf2-scalars/` (TF2's tensor form of a scalar, plus a histogram and a text per rollout, which the reader
must skip) and `truncated/` (a file cut inside its last record).

The writer is not a dependency of grpo-tui: run this with a scratch venv,

    python3 -m venv /tmp/tbx-venv && /tmp/tbx-venv/bin/pip install tensorboardX
    GRPO_TUI_PURE=1 PYTHONPATH=. /tmp/tbx-venv/bin/python scripts/make_tensorboard_fixtures.py

File names are made stable (`events.out.tfevents.<first console second>.node0.<pid>.0`) and the
file_version Event gets the first console time, so a run again writes the same bytes.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path
from unittest import mock

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from grpo_tui.lines.parse import LineParser  # noqa: E402
from grpo_tui.lines.records import MetricRecord  # noqa: E402

OUT = REPO / "tests" / "fixtures" / "sidecars" / "tensorboard"
SAMPLES = ["healthy-seed1", "gap-jump", "length-hacking", "no-signal", "non-finite", "crashed", "stalled"]
STEP_KEYS = ("train/step", "rollout/step")
# the processes of a Miles run that keep a writer, with the fixed "pid" their file is named by
PROCESSES = {"driver": 100, "train": 101, "rollout": 102}


def records(sample: str) -> list[MetricRecord]:
    """The sample log's metric records, in console order."""
    with open(REPO / "sample_logs" / f"{sample}.log", encoding="utf-8", errors="replace") as f:
        lines = f.read().splitlines(keepends=True)
    p = LineParser()
    items = p.feed_lines(lines) + p.flush()
    return [i for i in items if isinstance(i, MetricRecord)]


def scalar_points(recs: list[MetricRecord]) -> list[tuple[str, str, float, int, float]]:
    """(process, key, value, step, wall) of every add_scalar Miles makes for these records, in order.
    The tests call this too, to know what the fixtures must hold."""
    out = []
    seen_steps: set[tuple[str, int]] = set()
    wall = 0.0
    for r in recs:
        if r.kind not in ("rollout", "perf", "step"):
            continue
        if r.kind == "step":
            if (r.role, r.n) in seen_steps:  # Megatron prints a step twice; the tracker logs it once
                continue
            seen_steps.add((r.role, r.n))
        proc = "rollout" if r.actor == "RolloutManager" else "train"
        wall = r.ts if r.ts is not None else wall
        for key, value in r.metrics.items():
            if key in STEP_KEYS or isinstance(value, bool) or not isinstance(value, int | float):
                continue
            out.append((proc, key, float(value), r.n, wall))
    return out


def _writer(folder: Path, pid: int, first_wall: float):
    from tensorboardX import SummaryWriter

    with mock.patch("time.time", return_value=first_wall):
        w = SummaryWriter(logdir=str(folder), filename_suffix=f".tmp{pid}", flush_secs=3600)
        w.file_writer.flush()  # the file_version Event, written at the patched time
    return w


def _stable_names(folder: Path, first_wall: float) -> None:
    for p in folder.iterdir():
        pid = p.name.rsplit(".tmp", 1)[1]
        p.rename(folder / f"events.out.tfevents.{int(first_wall)}.node0.{pid}.0")


def write_sample(sample: str, out: Path) -> None:
    points = scalar_points(records(sample))
    folder = out / sample
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    first = points[0][4]
    writers = {name: _writer(folder, pid, first) for name, pid in PROCESSES.items()}
    for proc, key, value, step, wall in points:
        writers[proc].add_scalar(key, value, global_step=step, walltime=wall)
    for w in writers.values():
        w.close()
    _stable_names(folder, first)


def tf2_kind(key: str) -> str:
    """How tf2-scalars/ stores a key: the three tensor forms a TF2 scalar may take."""
    if key.startswith("perf/"):
        return "double_val"
    if key.startswith("rollout/"):
        return "float content"
    return "float_val"


def write_tf2(out: Path, rollouts: int = 6) -> None:
    import numpy as np
    from tensorboardX.proto.summary_pb2 import Summary, SummaryMetadata
    from tensorboardX.proto.tensor_pb2 import TensorProto
    from tensorboardX.proto.tensor_shape_pb2 import TensorShapeProto

    points = [p for p in scalar_points(records("healthy-seed1")) if p[3] < rollouts]
    folder = out / "tf2-scalars"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    first = points[0][4]
    w = _writer(folder, 101, first)
    meta = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="scalars"))
    last_step = -1
    for _, key, value, step, wall in points:
        kind = tf2_kind(key)
        if kind == "double_val":
            t = TensorProto(dtype=2, tensor_shape=TensorShapeProto(), double_val=[value])
        elif kind == "float content":
            t = TensorProto(dtype=1, tensor_shape=TensorShapeProto(), tensor_content=np.float32(value).tobytes())
        else:
            t = TensorProto(dtype=1, tensor_shape=TensorShapeProto(), float_val=[value])
        w.file_writer.add_summary(Summary(value=[Summary.Value(tag=key, tensor=t, metadata=meta)]), step, wall)
        if key.startswith("rollout/") and step != last_step:  # one histogram and one text per rollout: not scalars
            last_step = step
            w.add_histogram("rollout/lengths_hist", np.arange(10.0) + step, global_step=step, walltime=wall)
            w.add_text("notes", f"rollout {step}", global_step=step, walltime=wall)
    w.close()
    _stable_names(folder, first)


def write_truncated(out: Path, keep: int = 40) -> None:
    points = [p for p in scalar_points(records("healthy-seed1")) if p[0] == "train"][: keep + 1]
    folder = out / "truncated"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    w = _writer(folder, 101, points[0][4])
    for _, key, value, step, wall in points:
        w.add_scalar(key, value, global_step=step, walltime=wall)
    w.close()
    _stable_names(folder, points[0][4])
    (path,) = folder.iterdir()
    data = path.read_bytes()
    path.write_bytes(data[:-9])  # inside the last record: its data CRC and the end of its data missing


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("samples", nargs="*", default=SAMPLES)
    args = ap.parse_args()
    for s in args.samples:
        write_sample(s, args.out)
    write_tf2(args.out)
    write_truncated(args.out)
    total = sum(p.stat().st_size for p in args.out.rglob("*") if p.is_file())
    print(f"{args.out}: {total / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
