"""`grpo-tui check` on a big log vs `grep -o` for one metric, on the same file, same run.

Times, each a whole process timed from outside as a user waits for it (interpreter start, imports
with their bytecode cached as an installed grpo-tui has it, the work, the exit as the console
script runs and leaves after `check`: cli.one_shot, cli.leave; best of --repeat; peak RSS of that process):
  reference:  grep -o "'rollout/raw_reward': [0-9.]*" FILE | wc -l
  check:      grpo_tui.cli.main(["check", FILE])        accelerated (C scanner) and pure (GRPO_TUI_PURE=1)
  export:     grpo_tui.cli.main(["export", FILE, "-o", TMP/export.csv])   accelerated, the CSV written
  parse only: judge_path(FILE, judging=False)           so judging = check - parse, per rollout
  rollout by rollout (--incremental): check with bulk judging off (judge_path(bulk=False))
and prints the ratios to grep (bar: check <= 3.0 x grep; judging alone about <= 1 x grep).

    python benchmarks/check_speed.py                   # makes /tmp/grpo_check_200m.log if missing
    python benchmarks/check_speed.py --file big.log
    python benchmarks/check_speed.py --size-mb 20 --incremental
    python benchmarks/check_speed.py --size-mb 540 --scenario gap-jump   # a broken run, its alert held
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._common import time_grep  # noqa: E402
from benchmarks.make_big_log import make  # noqa: E402

_CHILD = r"""
import io, json, resource, sys, time
from contextlib import redirect_stdout
t0 = time.perf_counter()
sys.path.insert(0, sys.argv[2])
mode = sys.argv[3]
from grpo_tui.lines.parse import SCAN
from grpo_tui import cli, pipeline
cli.one_shot("export" if mode == "export" else "check")   # each child is one command, as cli.entry runs it
if mode == "check":
    from grpo_tui import cli
    with redirect_stdout(io.StringIO()):
        rc = cli.main(["check", sys.argv[1]])
    rollouts = None
elif mode == "export":
    import os, tempfile
    from grpo_tui import cli
    out = os.path.join(tempfile.mkdtemp(), "export.csv")
    rc = cli.main(["export", sys.argv[1], "-o", out])
    os.remove(out)
    rollouts = None
elif mode == "incremental":
    pipe = pipeline.judge_path(sys.argv[1], bulk=False)
    rc, rollouts = None, len(pipe.store.current.ids)
else:
    pipe = pipeline.judge_path(sys.argv[1], judging=False)
    rc, rollouts = None, sum(len(s.ids) for s in pipe.store.segments)
dt = time.perf_counter() - t0
print(json.dumps({"accel": SCAN is not None, "seconds": dt, "rc": rc, "rollouts": rollouts,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
from grpo_tui import cli
cli.leave(0, "check")      # out of the process as the console script leaves it after `check`
"""


# The children keep compiled bytecode, as an installed grpo-tui does (pip writes it; an editable
# install writes it at the first run): without it every run compiled ~30 modules, ~0.15 s.  It
# goes to a directory of its own, not into the source tree.
_PYCACHE = os.path.join(tempfile.gettempdir(), "grpo_tui_bench_pycache")


def _child_env(pure: bool) -> dict:
    env = dict(os.environ, GRPO_TUI_PURE="1" if pure else "0", PYTHONPYCACHEPREFIX=_PYCACHE)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def child(path: str, mode: str, pure: bool, repeat: int) -> dict:
    """Best of `repeat` runs of one mode in a fresh process.  `seconds` is the whole process as a
    user waits for it (interpreter start, imports, the work), timed from outside."""
    env = _child_env(pure)
    best = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        r = subprocess.run([sys.executable, "-c", _CHILD, path, str(ROOT), mode], capture_output=True, text=True,
                           check=True, env=env)
        wall = time.perf_counter() - t0
        got = json.loads(r.stdout.strip().splitlines()[-1])
        got["seconds"] = wall
        if best is None or got["seconds"] < best["seconds"]:
            best = got
    return best


def warm_imports() -> None:
    """One run that imports every module the timed runs use, so their bytecode is cached."""
    subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); "
                    "import grpo_tui.cli, grpo_tui.commands.check_cmd, grpo_tui.commands.export_cmd, grpo_tui.export",
                    str(ROOT)], check=True, env=_child_env(False))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--file", default=None)
    ap.add_argument("--size-mb", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3, help="runs of each (best is kept)")
    ap.add_argument("--incremental", action="store_true", help="also time rollout-by-rollout judging")
    ap.add_argument("--scenario", default="healthy",
                    help="the made log: a broken run held to its end (e.g. gap-jump), see make_big_log")
    a = ap.parse_args()
    tag = "" if a.scenario == "healthy" else f"_{a.scenario}"
    path = a.file or f"/tmp/grpo_check_{a.size_mb}m{tag}.log"
    if not os.path.exists(path):
        print(f"writing {path} ({a.size_mb} MB)...", flush=True)
        make(path, a.size_mb * 1_000_000, scenario=a.scenario)
    size = os.path.getsize(path)
    subprocess.run(["cat", path], stdout=subprocess.DEVNULL, check=True)  # warm the page cache
    grep_s, hits = min(time_grep(path) for _ in range(a.repeat))
    print(f"file: {path}  {size / 1e6:.0f} MB")
    print(f"grep -o raw_reward:      {grep_s:7.3f} s  ({hits:,} matches)")
    warm_imports()
    parse = child(path, "parse", False, a.repeat)
    n = parse["rollouts"] or 1
    rows = [("check accelerated", child(path, "check", False, a.repeat)),
            ("export CSV (accel.)", child(path, "export", False, a.repeat)),
            ("check pure", child(path, "check", True, a.repeat)),
            ("parse only (accel.)", parse)]
    if a.incremental:
        rows.append(("check rollout by rollout", child(path, "incremental", False, a.repeat)))
    for name, r in rows:
        accel = "" if r["accel"] or "pure" in name else "  (C scanner not built)"
        print(f"{name + ':':<25}{r['seconds']:7.3f} s  = {r['seconds'] / grep_s:5.1f} x grep; "
              f"peak RSS {r['peak_rss_mb']:.0f} MB{accel}")
    judge = rows[0][1]["seconds"] - parse["seconds"]
    print(f"judging (check - parse): {judge:7.3f} s  = {judge / grep_s:5.1f} x grep; "
          f"{1e3 * judge / n:.3f} ms per rollout ({n:,} rollouts)")
    print("bar: export <= 2.0 x grep, check <= 3.0 x grep (judging about <= 1 x)")


if __name__ == "__main__":
    main()
