"""The read and the walk in one call (_scan.c: read_scan) as the reader thread uses it: the
metric dicts read by the reader while its consumer is busy, and the same judgement with the read
and the walk together or apart.  (read_scan itself against scan_raw, fuzzed and under ASan in CI:
test_scan_equivalence.py.)"""

from __future__ import annotations

import glob
import os
import threading
import time

import pytest

from grpo_tui import export, pipeline
from grpo_tui.lines import files
from grpo_tui.lines.files import LEFT, InputError, ScannedReader, _views
from grpo_tui.lines.parse import LineParser
from grpo_tui.pipeline import whole_file

_scan = pytest.importorskip("grpo_tui.lines._scan")
if not hasattr(_scan, "read_scan"):
    pytest.skip("this build has no read_scan", allow_module_level=True)
pytestmark = pytest.mark.accel  # the built scanner, whatever GRPO_TUI_PURE says (CI's pure pass skips it)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
LOGS = sorted(glob.glob(os.path.join(ROOT, "sample_logs", "*.log")))
LINE = (
    "[2026-08-21 10:00:{s:02d}.000 main] x.py:1 - noise line {n}\n"
    "[2026-08-21 10:00:{s:02d}.500 RolloutManager] data.py:9 - rollout {n}: {{'rollout/raw_reward': 0.{n}, "
    "'rollout/response_length': {n}}}\n"
)


def _fold(block, walk) -> str:
    """What the parsing thread makes of a walk (repr: nan equals nan there)."""
    return repr(_scan.fold_raw(block, walk))


def _apart(path: str, **kw) -> list[tuple[bytes, str]]:
    return [(bytes(b), _fold(b, _scan.scan_raw(b))) for b in _views(path, **kw)]


def test_a_read_error_in_the_walk_is_an_input_error(tmp_path):
    p = tmp_path / "x.log"
    p.write_text("".join(LINE.format(n=i, s=i % 60) for i in range(50)))

    def failing(fd, mv, have, want, max_line):
        raise OSError(5, "Input/output error")

    with pytest.raises(InputError, match="read failed: Input/output error"):
        list(_views(str(p), walk=failing))


def test_a_busy_consumer_gets_blocks_whose_dicts_the_reader_read(tmp_path):
    """While the consumer parses (it is not waiting for a block), the reader's walk reads the
    block's metric dicts too (read_scan's `pairs`); the blocks and walks are the same."""
    p = tmp_path / "x.log"
    p.write_text("".join(LINE.format(n=i, s=i % 60) for i in range(3000)))
    r = ScannedReader(str(p), _scan.scan_raw, 4096, read_scan=_scan.read_scan)
    got = []
    for block, walk in r.blocks():
        time.sleep(0.002)  # a slow consumer: the reader is ahead of it
        got.append((bytes(block), _fold(block, walk)))
    assert r.spared > 0
    assert got == _apart(str(p), chunk=4096)
    assert not [t for t in threading.enumerate() if t.name == "grpo-tui-reader"]


def test_the_reader_reads_the_dicts_only_while_its_consumer_is_not_waiting(tmp_path):
    """ScannedReader._walk asks read_scan for the dicts (`pairs`) exactly when the consumer is
    not waiting for a block, and counts the blocks so walked."""
    p = tmp_path / "x.log"
    p.write_text("".join(LINE.format(n=i, s=i % 60) for i in range(20)))
    asked = []

    def recording(fd, mv, have, want, max_line, pairs):
        asked.append(pairs)
        return _scan.read_scan(fd, mv, have, want, max_line, pairs)

    r = ScannedReader(str(p), _scan.scan_raw, 4096)  # (no read_scan: its thread reads apart)
    list(r.blocks())
    r.read_scan = recording
    buf = memoryview(bytearray(8192))
    with open(p, "rb") as f:
        for waiting in (True, False, True):
            r._waiting = waiting
            f.seek(0)
            assert r._walk(f.fileno(), buf, 0, 4096, 1 << 20)[2] is not None
    assert asked == [False, True, False] and r.spared == 1


def test_a_pipe_gives_the_blocks_readinto_gives(tmp_path):
    """On stdin from a pipe (reads come short) the walked reader fills each block as
    BufferedReader.readinto does: the same blocks as without the walk, each walked."""
    import subprocess
    import sys

    src_log = tmp_path / "x.log"
    src_log.write_text("".join(LINE.format(n=i, s=i % 60) for i in range(2000)))
    writer = (
        "import sys, time\n"
        "data = open(sys.argv[1], 'rb').read()\n"
        "for i in range(0, len(data), 3000):\n"
        "    sys.stdout.buffer.write(data[i:i + 3000]); sys.stdout.flush(); time.sleep(0.001)\n"
    )
    reader = (
        "import sys\n"
        "from grpo_tui.lines import _scan\n"
        "from grpo_tui.lines.files import _views\n"
        "walk = _scan.read_scan if sys.argv[1] == '1' else None\n"
        "for item in _views('-', 1 << 16, walk=walk):\n"
        "    block, w = item if walk else (item, None)\n"
        "    print(len(block), walk is None or w is not None)\n"
    )
    out = []
    for walked in ("1", "0"):
        src = subprocess.Popen([sys.executable, "-c", writer, str(src_log)], stdout=subprocess.PIPE)
        got = subprocess.run(
            [sys.executable, "-c", reader, walked], stdin=src.stdout, capture_output=True, text=True, timeout=60
        )
        src.stdout.close()
        src.wait()
        assert got.returncode == 0, got.stderr
        out.append(got.stdout.split("\n"))
    assert out[0] == out[1] and len(out[0]) > 3
    assert all(ln.endswith("True") for ln in out[0] if ln)


@pytest.mark.parametrize("path", LOGS, ids=os.path.basename)
def test_judging_with_the_read_and_walk_apart_or_together_agrees(path, monkeypatch):
    """judge_path with read_scan (the dicts read by whichever thread) and without it: the same
    report, counts and exported rows."""
    now = os.path.getmtime(path) + 30.0
    out = []
    for fused in (True, False):
        if not fused:
            monkeypatch.setattr(type(LineParser()), "block_read_scan", property(lambda self: None))
        pipe = pipeline.judge_path(path, now=now)
        out.append(
            (
                repr(pipe.report(now).to_json(path)),
                pipe.parser.counts.as_dict(),
                repr(export.rows(pipe.store)),
                repr(export.rows(pipe.store, "step")),
            )
        )
    assert out[0] == out[1]


def _split_walk(share: float):
    """A read_scan walk leaving the last `share` of each block to the caller (ScannedReader._walk's)."""

    def walk(fd, mv, have, want, max_line):
        return _scan.read_scan(fd, mv, have, want, max_line, False, False, int((have + want) * (1 - share)))

    return walk


@pytest.mark.parametrize("path", LOGS[:4], ids=os.path.basename)
@pytest.mark.parametrize("share", [0.1, 0.5, 0.9])
def test_a_split_walk_gives_the_same_lines_in_two_blocks(path, share):
    """A walk that splits a block (read_scan's walk_to) gives its lines as two blocks, the first
    walked and the second LEFT to the caller: joined, the blocks without the split; the walks
    fold as scan_raw's of the same views; a split block's buffer is not reused before both parts
    are dropped (three buffers, the parts kept until then)."""
    for chunk in (4096, 1 << 14):
        whole = [bytes(b) for b in _views(path, chunk=chunk, buffers=3)]
        parts, kept, splits = [], [], 0
        for block, w in _views(path, chunk=chunk, buffers=3, walk=_split_walk(share)):
            if w is LEFT:
                splits += 1
                parts[-1] += b"\n" + bytes(block)
            else:
                assert w is None or _fold(block, w) == _fold(block, _scan.scan_raw(block))
                parts.append(bytes(block))
            kept.append((block, bytes(block)))
            kept = kept[-2:]  # the block before and this one: still as read
            assert all(bytes(b) == copy for b, copy in kept)
        assert parts == whole and splits > 0


def test_the_reader_gives_its_consumer_a_share_of_the_walk_by_how_long_it_waited(tmp_path):
    """ScannedReader._steer (an untimed read): the consumer's share goes up by SHARE_STEP after a
    block it was waiting for, down after one it was not, within [0, SHARE_MAX]; a fixed share
    stays.  While a share is given the reader reads no dicts for its consumer (spare), and
    read_scan walks to where the share starts."""
    p = tmp_path / "x.log"
    p.write_text("".join(LINE.format(n=i, s=i % 60) for i in range(20)))
    r = ScannedReader(str(p), _scan.scan_raw_untimed, 4096, untimed=True)
    list(r.blocks())
    r._share = 0.0
    r._steer(False)
    assert r._share == 0.0
    for k in range(1, 4):
        r._steer(True)
        assert r._share == pytest.approx(k * files.SHARE_STEP)
    r._steer(False)
    assert r._share == pytest.approx(2 * files.SHARE_STEP)
    for _ in range(100):
        r._steer(True)
    assert r._share == files.SHARE_MAX
    fixed = ScannedReader(str(p), _scan.scan_raw, 4096, share=0.25)
    list(fixed.blocks())
    fixed._steer(True)
    assert fixed._share == 0.25
    asked = []

    def recording(fd, mv, have, want, max_line, pairs, *rest):
        asked.append((pairs, rest))
        return _scan.read_scan(fd, mv, have, want, max_line, pairs, *rest)

    fixed.read_scan, fixed._waiting = recording, False
    with open(p, "rb") as f:
        fixed._walk(f.fileno(), memoryview(bytearray(8192)), 0, 4096, 1 << 20)
    assert asked == [(False, (False, 3072))]


@pytest.mark.parametrize("path", LOGS, ids=os.path.basename)
def test_reading_rows_with_the_walk_shared_by_both_threads_agrees(path, monkeypatch):
    """export's read (rows only, no time kept) with the reader leaving a fixed share of each
    block's walk to the parsing thread (so splitting blocks where no block ends otherwise): the
    same counts and exported rows as with the walk its own."""

    def shared(share):
        def blocks(path, chunk=files.CHUNK, *, start=0, end=None, scan=None, read_scan=None, untimed=False):
            assert scan is not None and start == 0  # (this module runs only with the C scanner)
            r = ScannedReader(path, scan, 8192, end, read_scan=read_scan, untimed=untimed, share=share)
            yield from r.blocks()
            assert share == 0 or read_scan is None or r.left > 0

        return blocks

    out = []
    for share in (0, 0.3, 0.7):
        monkeypatch.setattr(whole_file, "read_blocks", shared(share))
        pipe = pipeline.judge_path(path, judging=False, rows_only=True)
        out.append((pipe.parser.counts.as_dict(), repr(export.rows(pipe.store)), repr(export.rows(pipe.store, "step"))))
    assert out[1] == out[0] and out[2] == out[0]


def test_only_an_untimed_read_shares_its_walk(tmp_path):
    """A timed read (check, the dashboard) never splits a block, however long its consumer
    waits: where blocks end moves the log time an alert is raised at; an untimed one (export)
    does, once its consumer has waited for blocks."""
    p = tmp_path / "x.log"
    p.write_text("".join(LINE.format(n=i, s=i % 60) for i in range(3000)))

    def read(untimed: bool) -> ScannedReader:
        r = ScannedReader(
            str(p),
            _scan.scan_raw_untimed if untimed else _scan.scan_raw,
            4096,
            read_scan=_scan.read_scan,
            untimed=untimed,
        )
        for _ in r.blocks():
            pass  # a fast consumer: it waits for (nearly) every block
        return r

    timed = read(False)
    assert timed.left == 0 and timed._share == 0
    # (whether the consumer waited at all depends on how the two threads ran, on a loaded machine
    # too; once it did, the untimed read shares: `left` counts that it was shared at all)
    assert any(read(True).left > 0 for _ in range(20))


@pytest.mark.parametrize("share", [0.3, 0.7])
def test_a_split_block_stays_whole_until_the_block_after_its_tail_is_taken(tmp_path, share):
    """With a share of the walk given away each block comes in two parts from one buffer: that
    buffer is not read into again while either part may still be read (a slow consumer, the
    reader as far ahead as its lead lets it): every part reads as it did when taken until the
    one after the next is taken, and the parts join into the file."""
    p = tmp_path / "x.log"
    data = "".join(LINE.format(n=i, s=i % 60) for i in range(6000))
    p.write_text(data)
    r = ScannedReader(
        str(p), _scan.scan_raw_untimed, 4096, read_scan=_scan.read_scan, untimed=True, share=share, ahead=3
    )
    seen: list = []
    for block, walk in r.blocks():
        seen.append((block, bytes(block)))
        time.sleep(0.001)
        assert all(bytes(b) == copy for b, copy in seen[-2:])
        seen = seen[-2:]
        if walk is not None:
            assert _fold(block, walk) == _fold(block, _scan.scan_raw_untimed(block))
    assert r.left > 10
