"""Hostile input files, outputs and the top-level guard (issue #9; docs/contracts.md §6, §7).

Every failure is one line on stderr and a documented exit code, never a traceback; nothing
blocks on a FIFO or reads a device forever; no write is half-done, lands on the input log,
or lands in the log's folder.
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
from grpo_tui.lines.files import InputError, _views, check_readable, iter_lines, read_blocks
from grpo_tui.output import atomic_open, check_output_path, csv_safe, safe_text, write_text_atomic

PY = sys.executable
ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_logs"
LINE = (
    "[2026-08-21 10:00:00.000 rollout_manager] metrics.py:89 - perf {n}: "
    "{{'perf/rollout_time': 1.5, 'rollout/raw_reward': 0.6}}\n"
)


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
        next(iter_lines(dev))


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
        next(iter_lines(str(fifo)))


def test_path_errors_are_one_line(tmp_path):
    for bad in ("bad\x00name", str(tmp_path / "x.log" / "y"), "a" * 5000):
        with pytest.raises(InputError):
            check_readable(bad)


def _reference(data: bytes, limit: int) -> list[str]:
    return [p.decode("utf-8", "replace") for p in _byte_lines(data, limit)]


def _byte_lines(data: bytes, limit: int, start: int = 0, end: int | None = None) -> list[bytes]:
    """The lines a reader must give for bytes [start, end) of data, each cut to `limit`: from the
    first line that starts at or after `start`; with `end`, only lines whose newline is before it."""
    if start > 0:
        nl = data.find(b"\n", start - 1)
        if nl < 0:
            return []
        start = nl + 1
    if end is not None:
        cut = data.rfind(b"\n", 0, end)
        if cut < start:
            return []
        data = data[:cut]
    parts = data[start:].split(b"\n")
    if end is None and parts[-1] == b"":
        parts.pop()
    return [p[:limit] for p in parts]


@settings(max_examples=150, deadline=None)
@given(
    data=st.lists(st.sampled_from([b"a", b"bc", b"\n", b"\xe2\x82\xac", b"\xff", b"\r", b"long" * 5]), max_size=60).map(
        b"".join
    ),
    chunk=st.integers(1, 40),
    limit=st.integers(1, 12),
)
def test_reader_matches_a_split_with_lines_cut(tmp_path_factory, data, chunk, limit):
    """Whatever the chunk size, the reader gives the file's lines, each cut to MAX_LINE bytes."""
    p = tmp_path_factory.mktemp("r") / "x.log"
    p.write_bytes(data)
    old, files.MAX_LINE = files.MAX_LINE, limit
    try:
        got = list(iter_lines(str(p), chunk=chunk))
    finally:
        files.MAX_LINE = old
    assert got == _reference(data, limit)


def test_long_lines_are_cut_at_one_mib(tmp_path):
    big = 1 << 20
    p = tmp_path / "long.log"
    p.write_bytes(
        b"x" * (3 * big + 5) + b"\n" + LINE.format(n=1).encode() + b"y" * (big + 7) + b"\nz" + b"w" * (2 * big)
    )
    for chunk in (files.CHUNK, 1 << 16, 3 * big + 10):
        lines = list(iter_lines(str(p), chunk=chunk))
        assert [len(ln) for ln in lines] == [big, len(LINE.format(n=1)) - 1, big, big]
        assert lines[1] == LINE.format(n=1).rstrip("\n")


@settings(max_examples=150, deadline=None)
@given(
    data=st.lists(
        st.sampled_from([b"a", b"bc", b"\n", b"\n\n", b"\xe2\x82\xac", b"\xff", b"\r", b"long" * 5]), max_size=60
    ).map(b"".join),
    chunk=st.integers(1, 40),
    limit=st.integers(1, 12),
)
def test_reused_buffer_reader_matches_a_split_with_lines_cut(tmp_path_factory, data, chunk, limit):
    """read_blocks (one reused buffer) gives the file's lines, each cut
    to the limit, whatever the buffer size; so does the module's MAX_LINE as its default."""
    p = tmp_path_factory.mktemp("r") / "x.log"
    p.write_bytes(data)
    parts = data.split(b"\n")
    if parts[-1] == b"":
        parts.pop()
    want = [ln[:limit] for ln in parts]
    got = [ln for block, _ in read_blocks(str(p), chunk, max_line=limit) for ln in bytes(block).split(b"\n")]
    assert got == want
    old, files.MAX_LINE = files.MAX_LINE, limit
    try:
        got = [ln for block, _ in read_blocks(str(p), chunk) for ln in bytes(block).split(b"\n")]
    finally:
        files.MAX_LINE = old
    assert got == want


@settings(max_examples=150, deadline=None)
@given(
    data=st.lists(st.sampled_from([b"a", b"bc", b"\n", b"\n\n", b"\xff", b"long" * 5]), max_size=60).map(b"".join),
    chunk=st.integers(1, 40),
    limit=st.integers(1, 12),
    start=st.integers(0, 200),
    end=st.integers(0, 200),
)
def test_reader_reads_from_start_to_end(tmp_path_factory, data, chunk, limit, start, end):
    """With `start` and `end` (the dashboard's tail first, then the rest) the reader gives the lines
    of bytes [start, end): from the first line that starts at or after `start`, and a last line
    without its newline before `end` left to the follower; the same with the read-ahead thread."""
    p = tmp_path_factory.mktemp("r") / "x.log"
    p.write_bytes(data)
    old, files.MAX_LINE = files.MAX_LINE, limit
    try:
        got = [bytes(b) for b, _ in read_blocks(str(p), chunk, start=start, end=end)]
        ahead = [bytes(b) for b, _ in read_blocks(str(p), chunk, start=start, end=end, scan=len)]
        whole = [bytes(b) for b, _ in read_blocks(str(p), chunk, start=start)]
    finally:
        files.MAX_LINE = old
    assert (b"\n".join(got).split(b"\n") if got else []) == _byte_lines(data, limit, start, end)
    assert ahead == got
    assert (b"\n".join(whole).split(b"\n") if whole else []) == _byte_lines(data, limit, start)


def test_reused_buffer_reader_cuts_long_lines(tmp_path):
    big = 1 << 20
    p = tmp_path / "long.log"
    p.write_bytes(
        b"x" * (3 * big + 5)
        + b"\n"
        + LINE.format(n=1).encode()
        + b"y" * (big + 7)
        + b"\nz"
        + b"w" * (2 * big)
        + b"\n"
        + LINE.format(n=2).encode() * 3
    )
    ref = _byte_lines(p.read_bytes(), big)
    for chunk in (files.CHUNK, 1 << 16, 3 * big + 10):
        assert [ln for block, _ in read_blocks(str(p), chunk) for ln in bytes(block).split(b"\n")] == ref


def test_reused_buffer_reader_releases_each_view(tmp_path):
    """A block kept past the next read fails loudly: it never shows the bytes read after it."""
    p = tmp_path / "x.log"
    p.write_bytes(LINE.format(n=1).encode() * 50)
    blocks = [b for b, _ in read_blocks(str(p), chunk=300, max_line=200)]
    assert len(blocks) > 2
    with pytest.raises(ValueError):
        bytes(blocks[0])


def test_read_buffers_are_mapped_at_once_only_when_reads_fill_them(tmp_path):
    """A file at least a buffer long gets its buffers' pages mapped at once (reads fill them);
    a smaller one, a cut-off read (`end`) and a pipe touch only what they read.  Either way a
    buffer is a zeroed, writable map of the size asked for, and the blocks are the same."""
    big, small = tmp_path / "big.log", tmp_path / "small.log"
    big.write_bytes(LINE.format(n=1).encode() * 50)
    small.write_bytes(LINE.format(n=1).encode())
    cap = 300
    with open(big, "rb") as f:
        assert files._fills(f, cap, None)
        assert not files._fills(f, cap, cap - 1)
    with open(small, "rb") as f:
        assert not files._fills(f, cap, None)
    r, w = os.pipe()
    with os.fdopen(r, "rb") as f, os.fdopen(w, "wb"):
        assert not files._fills(f, cap, None)
    for fill in (True, False):
        buf = files._buffer(cap, fill)
        assert len(buf) == cap and buf[:] == bytes(cap)
        buf[cap - 1] = 0x0A
        assert buf.rfind(b"\n", 0, cap) == cap - 1
    ref = _byte_lines(big.read_bytes(), 200)
    got = [ln for block in _views(str(big), chunk=cap, max_line=200, buffers=3) for ln in bytes(block).split(b"\n")]
    assert got == ref


def test_stdin_is_read_with_the_same_line_bound(tmp_path):
    p = tmp_path / "long.log"
    p.write_bytes(b"x" * (3 << 20) + b"\nok\n")
    code = "from grpo_tui.lines.files import iter_lines; print([len(l) for l in iter_lines('-')])"
    with open(p, "rb") as fh:
        r = subprocess.run([PY, "-c", code], stdin=fh, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"[{1 << 20}, 2]"


def test_stdin_is_parsed_like_the_file():
    """judge_path('-') reads standard input through the same reused-buffer reader as a file."""
    path = SAMPLES / "healthy-seed1.log"
    code = (
        "import sys; from grpo_tui.pipeline import judge_path; from grpo_tui import export; "
        "p = judge_path(sys.argv[1], judging=False); "
        "print(p.parser.counts.as_dict(), repr(export.rows(p.store)))"
    )
    out = []
    for arg in (str(path), "-"):
        with open(path, "rb") as fh:
            r = subprocess.run([PY, "-c", code, arg], stdin=fh, capture_output=True, text=True, timeout=120, cwd=ROOT)
        assert r.returncode == 0, r.stderr
        out.append(r.stdout)
    assert out[0] == out[1] and "rollout" in out[0]


@pytest.mark.parametrize("cmd", [["check"], ["export"], ["export", "--format", "json"]])
@pytest.mark.parametrize("dev", ["/dev/zero", "/dev/urandom"])
def test_commands_refuse_devices_in_one_line(cmd, dev, capsys):
    code, out, err = run(cmd[0], dev, *cmd[1:], capsys=capsys)
    assert code == (3 if cmd[0] == "check" else 1)
    assert one_line(err) == f"grpo-tui {cmd[0]}: {dev}: not a regular file"


def test_calibrate_refuses_a_fifo(tmp_path, outdir, capsys):
    fifo = tmp_path / "seed.log"
    os.mkfifo(fifo)
    code, out, err = run(
        "calibrate", str(SAMPLES / "healthy-seed1.log"), str(fifo), "-o", str(outdir / "r.toml"), capsys=capsys
    )
    assert code == 1 and "not a regular file" in one_line(err)
    assert leftovers(outdir) == []


# ------------------------------------------------------------------ safe_text / csv_safe


def test_safe_text_strips_controls_and_bidi():
    s = "ok\x1b[31mred\x9b2J\u202eevil\u2066x\u2069\x00\x07\x7f end"
    assert safe_text(s) == "ok[31mred2Jevilx end"
    assert safe_text("a\tb\nc\r") == "a b c "
    assert safe_text("λ 中文 ✓ é") == "λ 中文 ✓ é"  # ordinary text is untouched
    assert safe_text(3.5) == "3.5"


@given(st.text())
def test_safe_text_never_lets_a_control_through(s):
    out = safe_text(s)
    assert not any(
        ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 or 0x202A <= ord(c) <= 0x202E or 0x2066 <= ord(c) <= 0x2069 for c in out
    )


@pytest.mark.parametrize(
    "cell, expected",
    [
        ("=1+1", "'=1+1"),
        ("+cmd|' /C calc'!A0", "'+cmd|' /C calc'!A0"),
        ("-2+3", "'-2+3"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\tx", "'\tx"),
        ("\rx", "'\rx"),
        ("- note", "'- note"),
        ("-0.5", "-0.5"),
        ("+3", "+3"),
        ("-1e-9", "-1e-9"),
        ("-inf", "-inf"),
        ("plain", "plain"),
        ("", ""),
        (-0.5, -0.5),
        (-3, -3),
        (True, True),
    ],
)
def test_csv_safe(cell, expected):
    assert csv_safe(cell) == expected


def test_export_csv_defuses_formulas_but_keeps_negative_numbers(tmp_path, outdir, capsys):
    p = tmp_path / "a.log"
    p.write_text(
        "[2026-08-21 10:00:00.000 rollout_manager] metrics.py:89 - perf 0: {'perf/rollout_time': 1.5, "
        "'note': '=HYPERLINK(\"http://x\")', 'neg_s': '-0.5', '=evil': 3, 'train/x': -0.5, "
        "'p': '@cmd'}\n"
    )
    code, out, err = run("export", str(p), capsys=capsys)
    assert code == 0, err
    header, row = list(csv.reader(io.StringIO(out)))
    cells = dict(zip(header, row))
    assert cells["note"] == '\'=HYPERLINK("http://x")' and cells["p"] == "'@cmd"
    assert cells["train/x"] == "-0.5" and cells["neg_s"] == "-0.5"
    assert "'=evil" in header and cells["'=evil"] == "3"


# ------------------------------------------------------------------ atomic output


def test_atomic_open_replaces_only_on_success(outdir):
    target = outdir / "out.csv"
    target.write_text("old\n")
    target.chmod(0o640)
    with pytest.raises(RuntimeError), atomic_open(str(target)) as fh:
        fh.write("half")
        raise RuntimeError("mid-write")
    assert target.read_text() == "old\n" and leftovers(outdir) == ["out.csv"]
    with pytest.raises(KeyboardInterrupt), atomic_open(str(target)) as fh:
        fh.write("half")
        raise KeyboardInterrupt
    assert target.read_text() == "old\n" and leftovers(outdir) == ["out.csv"]
    write_text_atomic(str(target), "new\n")
    assert target.read_text() == "new\n" and leftovers(outdir) == ["out.csv"]
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


def test_atomic_open_writes_through_a_symlink_and_into_devices(outdir):
    real = outdir / "real.csv"
    real.write_text("old")
    link = outdir / "link.csv"
    link.symlink_to(real)
    write_text_atomic(str(link), "new")
    assert link.is_symlink() and real.read_text() == "new"
    write_text_atomic("/dev/null", "discarded")  # not replaced by a regular file
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_atomic_open_errors_are_one_line(outdir):
    with pytest.raises(InputError, match="cannot write: No such file or directory"):
        write_text_atomic(str(outdir / "no" / "dir" / "x.csv"), "x")
    with pytest.raises(InputError, match="is a directory"):
        write_text_atomic(str(outdir), "x")
    assert leftovers(outdir) == []


def test_output_path_guard(log, outdir):
    inputs = [str(log)]
    with pytest.raises(InputError, match="is the input log"):
        check_output_path(str(log), inputs)
    with pytest.raises(InputError, match="is the input log"):
        check_output_path(str(log), inputs)
    hard = outdir / "hard.log"
    os.link(log, hard)
    with pytest.raises(InputError, match="is the input log"):
        check_output_path(str(hard), inputs)
    sym = outdir / "sym.log"
    sym.symlink_to(log)
    with pytest.raises(InputError, match="is the input log"):
        check_output_path(str(sym), inputs)
    rel = os.path.relpath(log.parent / ".." / "logs" / "run.log")
    with pytest.raises(InputError, match="is the input log"):
        check_output_path(rel, inputs)
    # beside the log (its folder, the link's or the target's) is fine: only the log itself is refused
    for folder in (outdir, log.parent):
        check_output_path(str(folder / "x.csv"), [str(sym)])
    check_output_path(str(log.parent / "x.csv"), inputs)
    check_output_path(str(log.parent / "sub" / "x.csv"), inputs)
    check_output_path(str(outdir / "x.csv"), inputs)
    check_output_path(str(outdir / "x.csv"), ["-"])


def test_export_onto_its_own_log_is_refused(log, capsys):
    before = log.read_bytes()
    for extra in ([], ["--force"]):
        code, out, err = run("export", str(log), "-o", str(log), *extra, capsys=capsys)
        assert code == 1 and "is the input log" in one_line(err)
        assert log.read_bytes() == before
    assert leftovers(log.parent) == ["run.log"]


def test_export_beside_its_log(log, capsys):
    """`export run.log -o run.csv` in the run's own folder: the natural place (issue #41 item 5);
    --force, which it once needed, is still accepted."""
    target = log.parent / "run.csv"
    for extra in ([], ["--force"]):
        code, out, err = run("export", str(log), "-o", str(target), *extra, capsys=capsys)
        assert code == 0, err
        assert target.read_text().startswith("rollout,")
    assert leftovers(log.parent) == ["run.csv", "run.log"]


def test_calibrate_output_is_guarded(tmp_path, capsys):
    logs = tmp_path / "seeds"
    logs.mkdir()
    for i in (1, 2):
        (logs / f"s{i}.log").write_bytes((SAMPLES / f"healthy-seed{i}.log").read_bytes())
    a, b = str(logs / "s1.log"), str(logs / "s2.log")
    code, out, err = run("calibrate", a, b, "-o", b, capsys=capsys)
    assert code == 1 and "is the input log" in one_line(err)
    assert leftovers(logs) == ["s1.log", "s2.log"]
    code, out, err = run("calibrate", a, b, "-o", str(logs / "r.toml"), capsys=capsys)  # beside the seeds
    assert code == 0, err
    assert (logs / "r.toml").read_text().startswith("# grpo-tui healthy ranges")


# ------------------------------------------------------------------ the top-level guard


@pytest.mark.parametrize(
    "cmd, argv, code", [("export", ["x.log"], 1), ("check", ["x.log"], 3), ("calibrate", ["a", "b", "-o", "r.toml"], 1)]
)
def test_internal_error_is_one_line(monkeypatch, capsys, cmd, argv, code):
    def bug(c, args):
        raise RuntimeError("boom\n  on two lines \x1b[2J")

    monkeypatch.setattr(cli, "_run", bug)
    got, out, err = run(cmd, *argv, capsys=capsys)
    assert got == code
    assert one_line(err) == (
        f"grpo-tui {cmd}: internal error: RuntimeError: boom on two lines [2J (run with --debug for the traceback)"
    )


def test_debug_prints_the_traceback(monkeypatch, capsys):
    monkeypatch.setattr(cli, "_run", lambda c, a: 1 / 0)
    code, out, err = run("--debug", "export", "x.log", capsys=capsys)
    assert code == 1 and "Traceback" in err and "ZeroDivisionError" in err
    code, out, err = run("check", "x.log", "--debug", capsys=capsys)
    assert code == 3 and "Traceback" in err


def test_ctrl_c_exits_130_quietly(monkeypatch, capsys):
    def interrupted(c, a):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_run", interrupted)
    assert run("export", "x.log", capsys=capsys) == (130, "", "")


def test_broken_pipe_in_process_is_quiet(log, monkeypatch, capsys):
    class Closed(io.StringIO):
        def write(self, s):
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(sys, "stdout", Closed())
    code = cli.main(["export", str(log)])
    err = capsys.readouterr().err
    assert code == 1 and "Broken pipe" not in err and "Traceback" not in err


def test_broken_pipe_subprocess_is_quiet(log):
    """`grpo-tui export big.log | head -1`: the reader is gone before we write."""
    proc = subprocess.Popen(
        [PY, "-m", "grpo_tui", "export", str(SAMPLES / "healthy-seed1.log")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 1
    assert "Traceback" not in err and "Exception ignored" not in err and "Broken pipe" not in err


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize(
    "argv",
    [["export", "{log}"], ["export", "{log}", "--format", "json"], ["check", "{log}"], ["simulate", "--rollouts", "3"]],
)
def test_full_disk_on_stdout(log, argv):
    argv = [a.format(log=log) for a in argv]
    with open("/dev/full", "w") as full:
        r = subprocess.run([PY, "-m", "grpo_tui", *argv], stdout=full, stderr=subprocess.PIPE, text=True, timeout=60)
    assert r.returncode == (3 if argv[0] == "check" else 1)
    assert one_line(r.stderr) == f"grpo-tui {argv[0]}: cannot write output: No space left on device"


# -- an exception mid-write leaves nothing behind (the guard reports it as one line)


def test_export_failure_mid_write_leaves_nothing(log, outdir, capsys, monkeypatch):
    target = outdir / "x.json"
    target.write_text("previous export")

    def boom(*a, **k):
        raise MemoryError("out of memory while rendering")

    import grpo_tui.output as output

    real_open = output.os.fdopen

    def failing_fdopen(fd, *a, **k):
        fh = real_open(fd, *a, **k)
        fh.write = boom
        return fh

    monkeypatch.setattr(output.os, "fdopen", failing_fdopen)
    code, out, err = run("export", str(log), "--format", "json", "-o", str(target), capsys=capsys)
    assert code == 1 and "internal error: MemoryError" in one_line(err)
    assert target.read_text() == "previous export" and leftovers(outdir) == ["x.json"]


def test_simulate_output_is_atomic(outdir, capsys, monkeypatch):
    import grpo_tui.commands.simulate_cmd as sim_cmd

    def half(*a, **k):
        yield 0.0, "first line"
        raise RuntimeError("generator broke")

    monkeypatch.setattr(sim_cmd, "generate", half)
    code, out, err = run("simulate", "--rollouts", "3", "-o", str(outdir / "s.log"), capsys=capsys)
    assert code == 1 and "internal error: RuntimeError: generator broke" in one_line(err)
    assert leftovers(outdir) == []
    monkeypatch.undo()
    code, out, err = run("simulate", "--rollouts", "3", "-o", str(outdir / "s.log"), capsys=capsys)
    assert code == 0 and leftovers(outdir) == ["s.log"]
    assert "rollout 2:" in (outdir / "s.log").read_text()


@settings(max_examples=60, deadline=None)
@given(
    data=st.lists(st.sampled_from([b"a", b"bc", b"\n", b"\n\n", b"\xff", b"long" * 5]), max_size=80).map(b"".join),
    chunk=st.integers(1, 40),
    limit=st.integers(1, 12),
    buffers=st.integers(1, 4),
)
def test_rotating_buffers_give_the_same_lines(tmp_path_factory, data, chunk, limit, buffers):
    """Buffers taking turns (the read-ahead thread's) give the blocks one buffer gives, and a
    block stays readable while the next `buffers - 1` are asked for."""
    p = tmp_path_factory.mktemp("r") / "x.log"
    p.write_bytes(data)
    want = [bytes(b) for b in _views(str(p), chunk=chunk, max_line=limit)]
    got, held = [], []
    for block in _views(str(p), chunk=chunk, max_line=limit, buffers=buffers):
        held.append((block, bytes(block)))
        held = held[-buffers:]
        assert all(bytes(b) == copy for b, copy in held)
        got.append(bytes(block))
    assert got == want


def test_scanned_blocks_are_the_blocks_and_their_scans(tmp_path):
    p = tmp_path / "x.log"
    p.write_bytes(b"".join(LINE.format(n=i).encode() for i in range(3000)))
    seen = []
    for block, scanned in read_blocks(str(p), 4096, scan=lambda b: len(bytes(b))):
        assert scanned == len(bytes(block))
        seen.append(bytes(block))
    assert seen == [bytes(b) for b, _ in read_blocks(str(p), chunk=4096)]


def test_scanned_blocks_pass_on_errors_and_stop_the_reader(tmp_path):
    import threading

    p = tmp_path / "x.log"
    p.write_bytes(b"".join(LINE.format(n=i).encode() for i in range(3000)))

    def bad_scan(block):
        raise RuntimeError("scan failed")

    with pytest.raises(RuntimeError, match="scan failed"):
        list(read_blocks(str(p), 4096, scan=bad_scan))
    blocks = read_blocks(str(p), 4096, scan=lambda b: None)
    next(blocks)
    blocks.close()  # the caller stops early: so does the reader
    assert not [t for t in threading.enumerate() if t.name == "grpo-tui-reader"]
    with pytest.raises(InputError):
        list(read_blocks(str(tmp_path / "gone.log"), scan=lambda b: None))
