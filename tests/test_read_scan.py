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
from grpo_tui.lines.files import InputError, ScannedReader, iter_block_views

_scan = pytest.importorskip("grpo_tui.lines._scan")
if not hasattr(_scan, "read_scan"):
    pytest.skip("this build has no read_scan", allow_module_level=True)
pytestmark = pytest.mark.accel   # the built scanner, whatever GRPO_TUI_PURE says (CI's pure pass skips it)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOGS = sorted(glob.glob(os.path.join(ROOT, "sample_logs", "*.log")))
LINE = ("[2026-08-21 10:00:{s:02d}.000 main] x.py:1 - noise line {n}\n"
        "[2026-08-21 10:00:{s:02d}.500 RolloutManager] data.py:9 - rollout {n}: {{'rollout/raw_reward': 0.{n}, "
        "'rollout/response_length': {n}}}\n")


def _fold(block, walk) -> str:
    """What the parsing thread makes of a walk (repr: nan equals nan there)."""
    return repr(_scan.fold_raw(block, walk))


def _apart(path: str, **kw) -> list[tuple[bytes, str]]:
    return [(bytes(b), _fold(b, _scan.scan_raw(b))) for b in iter_block_views(path, **kw)]


def test_a_read_error_in_the_walk_is_an_input_error(tmp_path):
    p = tmp_path / "x.log"
    p.write_text("".join(LINE.format(n=i, s=i % 60) for i in range(50)))

    def failing(fd, mv, have, want, max_line):
        raise OSError(5, "Input/output error")
    with pytest.raises(InputError, match="read failed: Input/output error"):
        list(iter_block_views(str(p), walk=failing))


def test_a_busy_consumer_gets_blocks_whose_dicts_the_reader_read(tmp_path):
    """While the consumer parses (it is not waiting for a block), the reader's walk reads the
    block's metric dicts too (read_scan's `pairs`); the blocks and walks are the same."""
    p = tmp_path / "x.log"
    p.write_text("".join(LINE.format(n=i, s=i % 60) for i in range(3000)))
    r = ScannedReader(str(p), _scan.scan_raw, 4096, read_scan=_scan.read_scan)
    got = []
    for block, walk in r.blocks():
        time.sleep(0.002)           # a slow consumer: the reader is ahead of it
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
    r = ScannedReader(str(p), _scan.scan_raw, 4096)      # (no read_scan: its thread reads apart)
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
    writer = ("import sys, time\n"
              "data = open(sys.argv[1], 'rb').read()\n"
              "for i in range(0, len(data), 3000):\n"
              "    sys.stdout.buffer.write(data[i:i + 3000]); sys.stdout.flush(); time.sleep(0.001)\n")
    reader = ("import sys\n"
              "from grpo_tui.lines import _scan\n"
              "from grpo_tui.lines.files import iter_block_views\n"
              "walk = _scan.read_scan if sys.argv[1] == '1' else None\n"
              "for item in iter_block_views('-', 1 << 16, walk=walk):\n"
              "    block, w = item if walk else (item, None)\n"
              "    print(len(block), walk is None or w is not None)\n")
    out = []
    for walked in ("1", "0"):
        src = subprocess.Popen([sys.executable, "-c", writer, str(src_log)], stdout=subprocess.PIPE)
        got = subprocess.run([sys.executable, "-c", reader, walked], stdin=src.stdout, capture_output=True,
                             text=True, timeout=60)
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
            monkeypatch.setattr(type(pipeline.LineParser()), "block_read_scan", property(lambda self: None))
        pipe = pipeline.judge_path(path, now=now)
        out.append((repr(pipe.report(now).to_json(path)), pipe.parser.counts.as_dict(),
                    repr(export.rows(pipe.store)), repr(export.rows(pipe.store, "step"))))
    assert out[0] == out[1]
