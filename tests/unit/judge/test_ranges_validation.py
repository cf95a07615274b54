"""The ranges file is validated fully at load: `FILE:LINE: reason`, never a traceback (issue #9)."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from grpo_tui import cli
from grpo_tui.judge.ranges import RangesError, load_ranges

ROOT = Path(__file__).resolve().parents[3]
SAMPLES = ROOT / "sample_logs"

README_EXAMPLE = """\
[meta]                      # free-form: seeds, date, steps per rollout
seeds = ["seed1.log", "seed2.log"]

[signals.reward]            # a step-aligned envelope (what `calibrate` writes)
kind = "trending"
log = false
sigma0 = 0.047
margin = 2.0
steps = [0, 1, 2]
lo = [0.53, 0.55, 0.56]
hi = [0.74, 0.76, 0.78]

[signals.gap]               # or simply a constant band
lo = 0.010
hi = 0.020
"""

ENVELOPE = """\
[signals.reward]
kind = "trending"
log = false
sigma0 = 0.047
margin = 2.0
eps = 0.0
steps = [0, 1, 2]
lo = [0.53, 0.55, 0.56]
hi = [0.74, 0.76, 0.78]
centre = [0.6, 0.65, 0.67]
"""


def write(tmp_path: Path, text: str | bytes, name: str = "r.toml") -> str:
    p = tmp_path / name
    p.write_bytes(text.encode() if isinstance(text, str) else text)
    return str(p)


def error_of(path: str) -> str:
    with pytest.raises(RangesError) as info:
        load_ranges(path)
    msg = str(info.value)
    assert "\n" not in msg and "Traceback" not in msg
    return msg


# ------------------------------------------------------------------ still valid


def test_readme_example_and_a_full_envelope_load(tmp_path):
    rs = load_ranges(write(tmp_path, README_EXAMPLE))
    assert rs.constant["gap"] == (0.010, 0.020) and "reward" in rs.envelopes
    rs = load_ranges(write(tmp_path, ENVELOPE))
    assert rs.bounds("reward", 1) == pytest.approx((0.55, 0.76))


def test_an_all_zero_calibration_stays_valid(tmp_path):
    """calibrate writes sigma0 = 0 and lo == hi == 0 for a signal that was 0 in every seed."""
    text = (
        '[signals.clipfrac]\nkind = "flat"\nlog = false\nsigma0 = 0.0\nmargin = 2.0\neps = 0.0\n'
        "steps = [0.0, 1.0]\nlo = [0.0, 0.0]\nhi = [0.0, 0.0]\ncentre = [0.0, 0.0]\n"
    )
    rs = load_ranges(write(tmp_path, text))
    assert rs.bounds("clipfrac", 5) == (0.0, 0.0)
    rs = load_ranges(write(tmp_path, "[signals.clipfrac]\nlo = 0\nhi = 0\nsigma0 = 0\n"))
    assert rs.constant["clipfrac"] == (0.0, 0.0) and rs.sigma0("clipfrac") == 0.0


def test_a_calibrated_file_loads(tmp_path, capsys):
    out = tmp_path / "cal" / "ranges.toml"
    out.parent.mkdir()
    assert (
        cli.main(["calibrate", str(SAMPLES / "healthy-seed1.log"), str(SAMPLES / "healthy-seed2.log"), "-o", str(out)])
        == 0
    )
    rs = load_ranges(str(out))
    assert {"reward", "gap", "kl"} <= set(rs.envelopes)
    assert all(math.isfinite(v) for env in rs.envelopes.values() for v in env.bounds_at(100.0))


# ------------------------------------------------------------------ each error, with its line


@pytest.mark.parametrize(
    "text, where, reason",
    [
        ("[signals.reward]\nlo = nan\nhi = 1\n", 2, "`lo` must be finite"),
        ("[signals.reward]\nlo = 0\nhi = inf\n", 3, "`hi` must be finite"),
        ("[signals.reward]\nlo = -inf\nhi = 1\n", 2, "must be finite"),
        ("[signals.reward]\nlo = 2\nhi = 1\n", 2, "lo 2 is above hi 1"),
        ('[signals.reward]\nlo = "0.5"\nhi = 1\n', 2, "`lo` must be a number, not a string"),
        ("[signals.reward]\nlo = true\nhi = 1\n", 2, "not a boolean"),
        ("[signals.reward]\nhi = 1\n", 1, "needs both `lo` and `hi`"),
        ("[signals.reward]\nlo = 0\nhi = 1\nsigma0 = -0.1\n", 4, "`sigma0` must be >= 0"),
        ("[signals.reward]\nlo = 0\nhi = 1\nsigma0 = nan\n", 4, "`sigma0` must be finite"),
        ('[signals.reward]\nlo = 0\nhi = 1\nkind = "wobbly"\n', 4, "`kind` must be one of trending, flat"),
        ('[signals.reward]\nlo = 0\nhi = 1\nlog = "yes"\n', 4, "`log` must be true or false"),
        ("[signals.reward]\nlo = 0\nhi = 1\nhigh = 2\n", 4, "unknown key `high`"),
        ("[signals.reward]\nlo = 0\nhi = 1\nsteps = [0, 1]\n", 4, "need `lo` and `hi` lists"),
        ("[signals.rewrad]\nlo = 0\nhi = 1\n", 1, "unknown signal `rewrad`"),
        ("[signal.reward]\nlo = 0\nhi = 1\n", 1, "unknown top-level key `signal`"),
        ("signals = 3\n", None, "`signals` must be a table"),
        ("meta = 3\n", None, "`meta` must be a table"),
        ("[signals]\nreward = 3\n", None, "`signals.reward` must be a table"),
        ("[signals.reward]\nsteps = [0, 2, 1]\nlo = [0, 0, 0]\nhi = [1, 1, 1]\n", 2, "strictly increasing"),
        ("[signals.reward]\nsteps = [0, 0]\nlo = [0, 0]\nhi = [1, 1]\n", 2, "strictly increasing"),
        ("[signals.reward]\nsteps = [0, 1]\nlo = [0, 2]\nhi = [1, 1]\n", 3, "lo 2 is above hi 1 at step 1"),
        ("[signals.reward]\nsteps = [0, 1]\nlo = [0]\nhi = [1, 1]\n", 3, "`lo` has 1 values, `steps` has 2"),
        ("[signals.reward]\nsteps = [0, 1]\nlo = [0, nan]\nhi = [1, 1]\n", 3, "`lo` must be finite"),
        ("[signals.reward]\nsteps = []\nlo = []\nhi = []\n", 2, "non-empty list"),
        ("[signals.reward]\nlo = [0, 1]\nhi = [1, 2]\n", 2, "need a `steps` list"),
        ("[signals.reward]\nsteps = [0, 1]\nlo = [0, 0]\nhi = [1, 1]\ncentre = [0.5]\n", 5, "`centre` has 1"),
        ("[signals.reward]\nsteps = [0, 1]\nlo = [0, 0]\nhi = [1, 1]\nmargin = 0\n", 5, "`margin` must be > 0"),
        ("[signals.reward]\nsteps = [0, 1]\nlo = [0, 0]\nhi = [1, 1]\nmargin = -2\n", 5, "`margin` must be > 0"),
        ("[signals.reward]\nsteps = [0, 1]\nlo = [0, 0]\nhi = [1, 1]\neps = -1\n", 5, "`eps` must be >= 0"),
        ("[signals.gap]\nlog = true\nsteps = [0, 1]\nlo = [-1, 0.1]\nhi = [1, 1]\n", 4, "log = true"),
        ('[signals.reward]\nsteps = [0, 1]\nlo = [0, "x"]\nhi = [1, 1]\n', 3, "not a string"),
        ("[signals.reward]\nsteps = [[0], [1]]\nlo = [0, 0]\nhi = [1, 1]\n", 2, "not a list"),
        ("[signals.reward]\nlo = 0\nhi = 1\n[signals.reward.sub]\nx = 1\n", 1, "unknown key `sub`"),
        ("[signals.reward]\nlo = 0\nhi = \n", 3, "invalid TOML"),
    ],
)
def test_each_problem_is_reported_with_its_line(tmp_path, text, where, reason):
    path = write(tmp_path, text)
    msg = error_of(path)
    prefix = f"{path}:{where}: " if where else f"{path}: "
    assert msg.startswith(prefix), msg
    assert reason in msg, msg


def test_errors_name_quoted_keys_without_escapes(tmp_path):
    msg = error_of(write(tmp_path, '[signals."\\u001b[2Jx"]\nlo = 0\nhi = 1\n'))
    assert "\x1b" not in msg and "unknown signal" in msg


@pytest.mark.parametrize(
    "text",
    [
        "a = " + "{ b = " * 100_000,
        "a = " + "[" * 100_000,
        "meta = " + "[" * 500 + "]" * 500,
        "[meta]\n" + ".".join(["x"] * 10_000) + " = 1\n",
        "a = " + "9" * 5000,
    ],
)
def test_deep_nesting_and_huge_numbers_are_errors_not_crashes(tmp_path, text):
    msg = error_of(write(tmp_path, text))
    assert "nested deeper" in msg or "invalid TOML" in msg, msg


def test_meta_may_nest_a_little(tmp_path):
    rs = load_ranges(write(tmp_path, '[meta]\nseeds = ["a", "b"]\nrun = { host = "x", gpus = [0, 1] }\n'))
    assert rs.meta["run"]["gpus"] == [0, 1]


@pytest.mark.parametrize(
    "content, reason",
    [
        (b"\x00\x01\x02binary", "not a text file"),
        (b"\xff\xfe[signals]", "not a text (UTF-8) file"),
        (b"# padding\n" * 120_000, "too large for a ranges file"),
    ],
)
def test_binary_and_huge_files(tmp_path, content, reason):
    assert reason in error_of(write(tmp_path, content))


def test_missing_unreadable_and_special_files(tmp_path):
    assert "no such file" in error_of(str(tmp_path / "missing.toml"))
    assert "is a directory" in error_of(str(tmp_path))
    assert "not a regular file" in error_of("/dev/zero")
    fifo = tmp_path / "r.fifo"
    os.mkfifo(fifo)
    assert "not a regular file" in error_of(str(fifo))  # returns at once: no open() on a FIFO


@pytest.mark.parametrize("extra", [[], ["--json"]])
def test_bad_ranges_through_the_cli(tmp_path, extra, capsys):
    bad = write(tmp_path, "[signals.reward]\nlo = nan\nhi = 1\n")
    rc = cli.main(["check", str(SAMPLES / "healthy-seed1.log"), "--ranges", bad, *extra])
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert rc == 3 and len(lines) == 1 and f"{bad}:2:" in lines[0], err


def test_deep_ranges_file_subprocess(tmp_path):
    bad = write(tmp_path, "x = " + "{ y = " * 100_000)
    r = subprocess.run(
        [sys.executable, "-m", "grpo_tui", "check", "--ranges", bad, str(SAMPLES / "healthy-seed1.log")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 3 and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "nested deeper" in r.stderr


def test_bounds_many_is_bounds_of_each_rollout():
    """bounds_many (by array) gives, per rollout, what bounds gives: the manual's early set
    before EARLY_ROLLOUTS and its whole-run set after, a constant band, nothing without defaults."""
    import math

    import numpy as np

    from grpo_tui.judge.ranges import RangeSet
    from grpo_tui.judge.signals import BY_ID

    sets = [
        RangeSet(),
        RangeSet(constant={"reward": (0.1, 0.9)}),
        RangeSet(use_defaults=False),
        RangeSet(constant={"kl": (1, 2)}, use_defaults=False),
    ]
    for ranges in sets:
        for sig_id in BY_ID:
            for ids in (np.arange(0, 30), np.arange(12, 52), np.arange(0, 6), np.array([9, 10]), np.arange(0)):
                many = ranges.bounds_many(sig_id, ids)
                each = [ranges.bounds(sig_id, int(r)) for r in ids]
                if all(b is None for b in each):
                    assert many is None, (sig_id, ids)
                    continue
                lo, hi = many
                for i, b in enumerate(each):
                    got = (lo[i], hi[i])
                    assert (b is None and math.isnan(got[0]) and math.isnan(got[1])) or got == b, (sig_id, i)
