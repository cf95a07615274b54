"""Shared helpers of the sidecar tests: the TensorBoard fixtures and what they must hold."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from grpo_tui.sidecar import tensorboard as tb

REPO = Path(__file__).resolve().parents[3]
TB_FIXTURES = REPO / "tests" / "fixtures" / "sidecars" / "tensorboard"
SAMPLES = ["healthy-seed1", "gap-jump", "length-hacking", "no-signal", "non-finite", "crashed", "stalled"]


def _load_maker() -> ModuleType:
    """scripts/make_tensorboard_fixtures.py: what it wrote is what the tests expect (one mapping of
    records to add_scalar calls, not two). Importing it needs grpo_tui only; tensorboardX is imported
    inside its writing functions."""
    name = "make_tensorboard_fixtures"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="session")
def maker() -> ModuleType:
    return _load_maker()


def record_ends(data: bytes) -> list[int]:
    """The offsets just past each complete record of a well-formed events file (a reference walk)."""
    ends = []
    pos = 0
    while len(data) - pos >= 16:
        length = int.from_bytes(data[pos : pos + 8], "little")
        if len(data) - pos - 16 < length:
            break
        pos += length + 16
        ends.append(pos)
    return ends


def points(s: tb.Scalars) -> list[tuple[str, int, float, float]]:
    """(tag, step, wall, value) of each point; NaN as a string so lists compare."""
    return [
        (s.tags[i], st, w, "nan" if v != v else v)  # type: ignore[misc]
        for i, st, w, v in zip(s.tag_ids.tolist(), s.steps.tolist(), s.wall.tolist(), s.values.tolist(), strict=True)
    ]


def train_file(sample: str) -> Path:
    (p,) = (TB_FIXTURES / sample).glob("*.101.0")
    return p
