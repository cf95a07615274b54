"""Write tests/fixtures/real/verl-file/exp.jsonl as verl's `file` logger writes it.

verl/utils/tracking.py FileLogger.log writes `orjson.dumps({"step": step, "data": data},
option=orjson.OPT_SERIALIZE_NUMPY) + b"\\n"` per step (no spaces; NaN and inf become null).  The
metric names and step-1 values are a real verl console line's
(https://github.com/verl-project/verl/issues/2060); later steps move them a little, and step 4
holds a NaN grad norm and an inf score as numpy floats, which orjson writes as null.

Needs orjson and numpy, in a scratch venv (never the project's):

    python3 -m venv /tmp/styles-venv && /tmp/styles-venv/bin/pip install orjson numpy
    /tmp/styles-venv/bin/python scripts/make_verl_file_fixture.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import orjson

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "real" / "verl-file" / "exp.jsonl"
STEP1 = {
    "global_seqlen/mean": 501736.75,
    "actor/entropy": 0.323,
    "training/rollout_probs_diff_mean": 0.003,
    "actor/kl_loss": 0.0,
    "actor/pg_loss": 0.001,
    "actor/pg_clipfrac": 0.001,
    "actor/ppo_kl": -0.0,
    "actor/grad_norm": 0.02,
    "perf/mfu/actor": 0.343,
    "actor/lr": 1e-06,
    "training/global_step": 1.0,
    "critic/score/mean": 0.558,
    "critic/rewards/mean": 0.558,
    "critic/advantages/mean": -0.016,
    "response_length/mean": 288.698,
    "response_length/max": 963.0,
    "response_length/clip_ratio": 0.0,
    "timing_s/gen": 41.2,
}


def main() -> None:
    lines = []
    for step in range(1, 9):
        data = {k: np.float64(v) for k, v in STEP1.items()}
        data["critic/score/mean"] = np.float64(0.558 + 0.01 * (step - 1))
        data["response_length/mean"] = np.float64(288.698 - 3.0 * (step - 1))
        data["training/global_step"] = np.float64(step)
        if step == 4:
            data["actor/grad_norm"] = np.float64("nan")
            data["critic/score/mean"] = np.float32("inf")
        lines.append(orjson.dumps({"step": step, "data": data}, option=orjson.OPT_SERIALIZE_NUMPY))
    OUT.write_bytes(b"".join(line + b"\n" for line in lines))


if __name__ == "__main__":
    main()
