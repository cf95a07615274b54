"""Hostile input files (issue #9; design.md §7).

Every failure is one line on stderr, never a traceback; nothing blocks on a FIFO or reads a
device forever; no line is held whole in memory, however long.
"""

from __future__ import annotations

import csv
import io
import os
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from grpo_tui import cli
from grpo_tui.lines import files
from grpo_tui.lines.files import InputError, check_readable, iter_line_blocks

PY = sys.executable
ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_logs"
LINE = ("[2026-08-21 10:00:00.000 rollout_manager] metrics.py:89 - perf {n}: "
        "{{'perf/rollout_time': 1.5, 'rollout/raw_reward': 0.6}}\n")


def run(*argv: str, capsys) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


@pytest.fixture
def log(tmp_path) -> Path:
    p = tmp_path / "logs" / "run.log"
    p.parent.mkdir()
    p.write_text("".join(LINE.format(n=n) for n in range(5)))
    return p


@pytest.fixture
def outdir(tmp_path) -> Path:
    d = tmp_path / "out"
    d.mkdir()
    return d


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


# ------------------------------------------------------------------ input files


@pytest.mark.parametrize("dev", ["/dev/zero", "/dev/urandom", "/dev/null"])
def test_devices_are_refused(dev):
    if not os.path.exists(dev):
        pytest.skip(dev)
    with pytest.raises(InputError, match="not a regular file"):
        check_readable(dev)
    with pytest.raises(InputError, match="not a regular file"):
        next(iter_line_blocks(dev))


def test_fifo_socket_and_folder_are_refused_without_blocking(tmp_path):
    fifo = tmp_path / "fifo.log"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match=r"fifo\.log: not a regular file"):
        check_readable(str(fifo))
    sock_path = tmp_path / "s.sock"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(sock_path))
        with pytest.raises(InputError, match="not a regular file"):
            check_readable(str(sock_path))
    with pytest.raises(InputError, match="is a directory"):
        check_readable(str(tmp_path))


def test_reader_rechecks_after_open(tmp_path, monkeypatch):
    """A file swapped for a FIFO between the stat and the open: O_NONBLOCK + fstat refuse it."""
    fifo = tmp_path / "fifo.log"
    os.mkfifo(fifo)
    monkeypatch.setattr(files, "check_readable", lambda path: None)
    with pytest.raises(InputError, match="not a regular file"):
        next(iter_line_blocks(str(fifo)))


def test_path_errors_are_one_line(tmp_path):
    for bad in ("bad\x00name", str(tmp_path / "x.log" / "y"), "a" * 5000):
        with pytest.raises(InputError):
            check_readable(bad)


def _reference(data: bytes, limit: int) -> list[str]:
    parts = data.split(b"\n")
    if parts[-1] == b"":
        parts.pop()
    return [p[:limit].decode("utf-8", "replace") for p in parts]


@settings(max_examples=150, deadline=None)
@given(data=st.lists(st.sampled_from([b"a", b"bc", b"\n", b"\xe2\x82\xac", b"\xff", b"\r", b"long" * 5]),
                     max_size=60).map(b"".join),
       chunk=st.integers(1, 40), limit=st.integers(1, 12))
def test_reader_matches_a_split_with_lines_cut(tmp_path_factory, data, chunk, limit):
    """Whatever the chunk size, the reader gives the file's lines, each cut to MAX_LINE bytes."""
    p = tmp_path_factory.mktemp("r") / "x.log"
    p.write_bytes(data)
    old, files.MAX_LINE = files.MAX_LINE, limit
    try:
        got = [ln for block in iter_line_blocks(str(p), chunk=chunk) for ln in block]
    finally:
        files.MAX_LINE = old
    assert got == _reference(data, limit)


def test_long_lines_are_cut_at_one_mib(tmp_path):
    big = 1 << 20
    p = tmp_path / "long.log"
    p.write_bytes(b"x" * (3 * big + 5) + b"\n" + LINE.format(n=1).encode() + b"y" * (big + 7) + b"\nz" + b"w" * (2 * big))
    for chunk in (files.CHUNK, 1 << 16, 3 * big + 10):
        lines = [ln for block in iter_line_blocks(str(p), chunk=chunk) for ln in block]
        assert [len(ln) for ln in lines] == [big, len(LINE.format(n=1)) - 1, big, big]
        assert lines[1] == LINE.format(n=1).rstrip("\n")


def test_stdin_is_read_with_the_same_line_bound(tmp_path):
    p = tmp_path / "long.log"
    p.write_bytes(b"x" * (3 << 20) + b"\nok\n")
    code = ("from grpo_tui.lines.files import iter_line_blocks; "
            "print([len(l) for b in iter_line_blocks('-') for l in b])")
    with open(p, "rb") as fh:
        r = subprocess.run([PY, "-c", code], stdin=fh, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"[{1 << 20}, 2]"


@pytest.mark.parametrize("cmd", [["check"], ["export"], ["export", "--format", "json"]])
@pytest.mark.parametrize("dev", ["/dev/zero", "/dev/urandom"])
def test_commands_refuse_devices_in_one_line(cmd, dev, capsys):
    code, out, err = run(cmd[0], dev, *cmd[1:], capsys=capsys)
    assert code == (3 if cmd[0] == "check" else 1)
    assert one_line(err) == f"grpo-tui {cmd[0]}: {dev}: not a regular file"


def test_calibrate_refuses_a_fifo(tmp_path, outdir, capsys):
    fifo = tmp_path / "seed.log"
    os.mkfifo(fifo)
    code, out, err = run("calibrate", str(SAMPLES / "healthy-seed1.log"), str(fifo), "-o",
                         str(outdir / "r.toml"), capsys=capsys)
    assert code == 1 and "not a regular file" in one_line(err)
    assert leftovers(outdir) == []
