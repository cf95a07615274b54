"""The whole CLI against junk files (issue #9): nothing escapes, exit codes stay documented.

In process (hypothesis): random bytes and structured junk through `check`, `export` (CSV and
JSON) and `calibrate`.  As a user (subprocess): devices, a FIFO, and output paths that must
be refused.  Example counts are small so CI stays fast (FUZZ_N=1000 for a longer hunt);
the parser has its own fuzzing.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings, strategies as st

from grpo_tui import cli

PY = sys.executable
EXITS = {"check": {0, 1, 2, 3}, "export": {0, 1}, "calibrate": {0, 1}}
FUZZ = settings(
    max_examples=int(os.environ.get("FUZZ_N", 40)), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

HEADERS = [
    "[2026-08-21 10:{m:02d}:{s:02d}.000 rollout_manager] metrics.py:89 - ",
    "(MegatronTrainRayActor pid=1) [2026-08-21 10:{m:02d}:{s:02d}] model.py:649 - ",
    "\x1b[36m(SGLangEngine pid=2)\x1b[0m [2026-08-21 10:{m:02d}:{s:02d}] ",
    "",
]
KEYS = [
    "rollout/raw_reward",
    "rollout/response_lengths",
    "rollout/truncated",
    "perf/rollout_time",
    "train/train_rollout_logprob_abs_diff",
    "train/train_rollout_kl",
    "train/grad_norm",
    "train/pg_clipfrac",
    "rollout/zero_std/count_0",
    "=cmd",
    "x\u202ey",
    "note",
]
VALUES = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(-(10**30), 10**30).map(str),
    st.sampled_from(
        [
            "nan",
            "inf",
            "-inf",
            "np.float64(0.5)",
            "np.int64(3)",
            "tensor(2.0)",
            "True",
            "None",
            "'=HYPERLINK(\"x\")'",
            "'-0.5'",
            "'\x1b[2J'",
            "[1, 2]",
            "{'a': 1}",
            "'",
            "",
        ]
    ),
)
RECORD = st.builds(
    lambda head, kind, n, pairs, m, s, cut: (
        head.format(m=m, s=s) + f"{kind} {n}: {{" + ", ".join(f"'{k}': {v}" for k, v in pairs) + "}"
    )[:cut],
    st.sampled_from(HEADERS),
    st.sampled_from(["rollout", "step", "perf", "eval", "Rollout"]),
    st.integers(-3, 60),
    st.lists(st.tuples(st.sampled_from(KEYS), VALUES), max_size=6),
    st.integers(0, 59),
    st.integers(0, 59),
    st.integers(0, 400),
)
JUNK_LINE = st.one_of(
    RECORD,
    st.text(max_size=80),
    st.sampled_from(
        [
            "Traceback (most recent call last):",
            "Job 'raysubmit_1' failed",
            "\x00\x00\x00",
            "EXEC: python3 train.py --rollout-batch-size 0 --n-samples-per-prompt 8 --global-batch-size 0",
            "503 Service Unavailable",
            "\r",
            "\u202e\u2066",
            "'" * 50,
        ]
    ),
)
JUNK = st.one_of(
    st.binary(max_size=3000),
    st.lists(JUNK_LINE, max_size=40).map(lambda ls: "\n".join(ls).encode("utf-8", "surrogatepass")),
)


def _simulated(seed: int) -> list[str]:
    from grpo_tui.simulate import generate

    return [line for _, line in generate("healthy", 8, seed, noise_per_rollout=2)]


SIMULATED = {seed: _simulated(seed) for seed in (1, 2)}


@st.composite
def spoiled(draw, seed: int) -> bytes:
    """A short healthy log with junk lines put in, some of its lines dropped or cut."""
    lines = list(SIMULATED[seed])
    for _ in range(draw(st.integers(0, 8))):
        i = draw(st.integers(0, len(lines)))
        action = draw(st.sampled_from(["insert", "drop", "cut"]))
        if action == "insert":
            lines.insert(i, draw(JUNK_LINE))
        elif lines and i < len(lines):
            lines[i] = "" if action == "drop" else lines[i][: draw(st.integers(0, len(lines[i])))]
    return "\n".join(lines).encode("utf-8", "surrogatepass")


def run_in_process(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(argv)
    return code, out.getvalue(), err.getvalue()


# A Python traceback, not a log's own "Traceback (most recent call last)" line quoted in a
# message (calibrate names a crashed seed by quoting its log: that is not an escape).
PY_TRACEBACK = re.compile(r"^Traceback \(most recent call last\):\n\s+File ", re.M)


def assert_clean(cmd: str, code: int, err: str) -> None:
    assert code in EXITS[cmd], (code, err)
    assert not PY_TRACEBACK.search(err) and "internal error" not in err, err


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


@FUZZ
@given(data=JUNK)
def test_check_and_export_survive_junk(work, data):
    f = work / "in" / "junk.log"
    f.parent.mkdir(exist_ok=True)
    f.write_bytes(data)
    code, out, err = run_in_process(["check", str(f)])
    assert_clean("check", code, err)
    code, out, err = run_in_process(["check", str(f), "--json"])
    assert_clean("check", code, err)
    assert json.loads(out)["status"] in ("ok", "warning", "critical", "unknown")
    code, out, err = run_in_process(["export", str(f), "--format", "json"])
    assert_clean("export", code, err)
    event(f"export exit {code}")
    if code == 0:
        assert isinstance(json.loads(out), list)
    else:
        assert out == "" and len(err.strip().splitlines()) == 1
    code, out, err = run_in_process(["export", str(f), "--axis", "step"])
    assert_clean("export", code, err)
    code, out, err = run_in_process(["export", str(f)])
    assert_clean("export", code, err)
    if code == 0:
        header, *rows = list(csv.reader(io.StringIO(out)))
        assert all(len(r) == len(header) for r in rows)
        assert not any(c.startswith(("=", "@")) for r in [header, *rows] for c in r)


@FUZZ
@given(a=st.one_of(JUNK, spoiled(1)), b=st.one_of(JUNK, spoiled(2)))
def test_calibrate_survives_junk(work, a, b):
    seeds = work / "seeds"
    seeds.mkdir(exist_ok=True)
    f, f2 = seeds / "a.log", seeds / "b.log"
    f.write_bytes(a)
    f2.write_bytes(b)
    out = work / "ranges" / "r.toml"
    out.parent.mkdir(exist_ok=True)
    if out.exists():
        out.unlink()
    code, _, err = run_in_process(["calibrate", str(f), str(f2), "-o", str(out)])
    assert_clean("calibrate", code, err)
    event(f"calibrate exit {code}")
    assert os.listdir(out.parent) == (["r.toml"] if code == 0 else [])
    if code == 0:  # whatever calibrate writes, it can read back
        code, _, err = run_in_process(["check", str(f), "--ranges", str(out)])
        assert_clean("check", code, err)
        assert "ranges" not in err


# ------------------------------------------------------------------ as a user (subprocess)


def grpo(*argv: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-m", "grpo_tui", *argv], capture_output=True, text=True, timeout=60, **kw)


def one_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize("dev", ["/dev/zero", "/dev/urandom"])
def test_check_a_device(dev):
    r = grpo("check", dev)
    assert r.returncode == 3 and one_line(r.stderr) == f"grpo-tui check: {dev}: not a regular file"


def test_a_fifo_does_not_block(tmp_path):
    fifo = tmp_path / "pipe.log"
    os.mkfifo(fifo)
    for argv, code in (
        (["check", str(fifo)], 3),
        (["export", str(fifo)], 1),
        (["check", "--ranges", str(fifo), str(fifo)], 3),
        (["calibrate", str(fifo), str(fifo), "-o", str(tmp_path / "o" / "r.toml")], 1),
    ):
        r = grpo(*argv)  # timeout=60: a blocking open() fails the test instead of hanging it
        assert r.returncode == code and "not a regular file" in one_line(r.stderr)


def test_export_onto_the_log_is_refused(tmp_path):
    log = tmp_path / "x.log"
    log.write_text("[2026-08-21 10:00:00.000 rollout_manager] metrics.py:89 - perf 0: {'perf/rollout_time': 1.5}\n")
    before = log.read_bytes()
    r = grpo("export", str(log), "-o", str(log))
    assert r.returncode == 1 and "is the input log" in one_line(r.stderr)
    assert log.read_bytes() == before and os.listdir(tmp_path) == ["x.log"]


def test_export_into_a_missing_folder(tmp_path):
    log = tmp_path / "x.log"
    log.write_text("[2026-08-21 10:00:00.000 rollout_manager] metrics.py:89 - perf 0: {'perf/rollout_time': 1.5}\n")
    r = grpo("export", str(log), "-o", "/nonexistent/dir/out.csv")
    assert r.returncode == 1
    assert one_line(r.stderr) == "grpo-tui export: /nonexistent/dir/out.csv: cannot write: No such file or directory"
    assert not os.path.exists("/nonexistent/dir") and os.listdir(tmp_path) == ["x.log"]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_export_to_a_full_disk(tmp_path):
    log = tmp_path / "x.log"
    log.write_text("[2026-08-21 10:00:00.000 rollout_manager] metrics.py:89 - perf 0: {'perf/rollout_time': 1.5}\n")
    with open("/dev/full", "w") as full:
        r = subprocess.run(
            [PY, "-m", "grpo_tui", "export", str(log)], stdout=full, stderr=subprocess.PIPE, text=True, timeout=60
        )
    assert r.returncode == 1
    assert one_line(r.stderr) == "grpo-tui export: cannot write output: No space left on device"
