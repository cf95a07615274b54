"""`grpo-tui check` on a big log vs `grep -o` for one metric, on the same file, same run.

Times, each a whole process timed from outside as a user waits for it (interpreter start, imports
with their bytecode cached as an installed grpo-tui has it, the work, the exit as the console
script runs and leaves after `check`: process.one_shot, process.leave; best of --repeat rounds in which the
runs, grep too, take turns; peak RSS of that process):
  reference:  grep -o "'rollout/raw_reward': [0-9.]*" FILE | wc -l
  check:      grpo_tui.cli.main(["check", FILE])        accelerated (C scanner) and pure (GRPO_TUI_PURE=1)
  export:     grpo_tui.cli.main(["export", FILE, "-o", TMP/export.csv])   accelerated, the CSV written
              (and with --format json: the JSON)
  parse only: judge_path(FILE, judging=False), read as check reads it (the noise lines' times kept,
              where export keeps none: LineParser.noise_times), its reader started early as the CLI
              starts it (lines/prefetch.py); so judging = check - parse, per rollout
  rollout by rollout (--incremental): check with bulk judging off (judge_path(bulk=False))
and prints the ratios to grep (bar: check <= 3.0 x grep; judging alone about <= 1 x grep), and
each run's process CPU time (user + sys, both threads): it swings far less with this VM's slow
spells than wall time does, so a change of a few per cent in the work shows there first.

    python benchmarks/check_speed.py                   # makes /tmp/grpo_check_200m.log if missing
    python benchmarks/check_speed.py --file big.log
    python benchmarks/check_speed.py --size-mb 20 --incremental
    python benchmarks/check_speed.py --size-mb 540 --scenario gap-jump   # a broken run, its alert held
    python benchmarks/check_speed.py --size-mb 540 --anchored 0.3        # noise with anchors in it
    python benchmarks/check_speed.py --file big.log --repeat 7 --no-pure  # without the pure path's ~60 x grep runs
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
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
from grpo_tui import cli, process     # (only what the console script imports before the command runs:
process.one_shot("export" if mode.startswith("export") else "check")   # check and export read ahead meanwhile)
if mode == "check":
    with redirect_stdout(io.StringIO()):
        rc = cli.main(["check", sys.argv[1]])
    rollouts = None
elif mode in ("export", "export-json"):
    import os, tempfile
    out = os.path.join(tempfile.mkdtemp(), "export.csv")
    rc = cli.main(["export", sys.argv[1], "-o", out] + (["--format", "json"] if mode == "export-json" else []))
    os.remove(out)
    rollouts = None
else:
    if mode == "parse":      # check's reading as the CLI starts it (cli._read_ahead), nothing judged
        from grpo_tui.lines import files, prefetch
        prefetch.start(sys.argv[1], files.BULK_CHUNK)
    from grpo_tui import pipeline
    if mode == "incremental":
        pipe = pipeline.judge_path(sys.argv[1], bulk=False)
        rc, rollouts = None, len(pipe.store.current.ids)
    else:
        pipe = pipeline.judge_path(sys.argv[1], judging=False)
        rc, rollouts = None, sum(len(s.ids) for s in pipe.store.segments)
dt = time.perf_counter() - t0
from grpo_tui.lines.native import SCAN
ru = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"accel": SCAN is not None, "seconds": dt, "rc": rc, "rollouts": rollouts,
                  "peak_rss_mb": ru.ru_maxrss / 1024, "cpu_s": ru.ru_utime + ru.ru_stime}))
from grpo_tui import process
process.leave(0, "check")      # out of the process as the console script leaves it after `check`
"""


# The children keep compiled bytecode, as an installed grpo-tui does (pip writes it for a regular
# install; setup.py writes it for an editable one, where PYTHONDONTWRITEBYTECODE would otherwise
# leave every run compiling ~30 modules, ~0.1 s).  Here it goes to a directory of its own, kept
# fresh whatever was edited since the install.
_PYCACHE = os.path.join(tempfile.gettempdir(), "grpo_tui_bench_pycache")


def _child_env(pure: bool) -> dict:
    env = dict(os.environ, GRPO_TUI_PURE="1" if pure else "0", PYTHONPYCACHEPREFIX=_PYCACHE)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def child(path: str, mode: str, pure: bool) -> dict:
    """One run of one mode in a fresh process.  `seconds` is the whole process as a user waits
    for it (interpreter start, imports, the work), timed from outside."""
    t0 = time.perf_counter()
    r = subprocess.run(
        [sys.executable, "-c", _CHILD, path, str(ROOT), mode],
        capture_output=True,
        text=True,
        check=True,
        env=_child_env(pure),
    )
    wall = time.perf_counter() - t0
    got = json.loads(r.stdout.strip().splitlines()[-1])
    got["seconds"] = wall
    return got


def warm_file(path: str) -> None:
    """Read the log once, untimed, so the timed run reads it from the page cache, as a log being
    written is.  Why before every run: this VM's kernel reclaims page cache it finds cold (DAMON,
    kdamond) - with 22 GB free it held only ~1.6 GB, and a 540 MB log read once at the start was
    partly read from disk again minutes later (grep 0.34 -> 0.44 s, every run slower alike)."""
    with open(path, "rb") as f:
        while f.read(8 << 20):
            pass


def rounds(
    path: str, runs: list[tuple[str, str, bool]], repeat: int
) -> tuple[dict, tuple[float, int], dict, list, dict]:
    """Best of `repeat` rounds per run, the runs taking turns within each round (grep too), so a
    slow spell of the machine hits them alike (a VM's speed swings by a third within minutes:
    one mode's runs in a row made `check - parse` anything from 0.2 to 0.9 s).  Every run reads
    a warm file (warm_file).  Also returns each run's times of every round (for the median),
    grep's time of every round (for each round's own ratio), and each run's process CPU time
    (user + sys, all threads) of every round."""
    best: dict[str, dict] = {}
    times: dict[str, list[float]] = {name: [] for name, _, _ in runs}
    cpus: dict[str, list[float]] = {name: [] for name, _, _ in runs}
    greps: list[tuple[float, int]] = []
    for _ in range(repeat):
        warm_file(path)
        greps.append(time_grep(path))
        for name, mode, pure in runs:
            warm_file(path)
            got = child(path, mode, pure)
            times[name].append(got["seconds"])
            cpus[name].append(got["cpu_s"])
            if name not in best or got["seconds"] < best[name]["seconds"]:
                best[name] = got
    return best, min(greps), times, [g for g, _ in greps], cpus


def warm_imports() -> None:
    """One run that imports every module the timed runs use, so their bytecode is cached."""
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; sys.path.insert(0, sys.argv[1]); "
            "import grpo_tui.cli, grpo_tui.commands.check_cmd, grpo_tui.commands.export_cmd, grpo_tui.export",
            str(ROOT),
        ],
        check=True,
        env=_child_env(False),
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--file", default=None)
    ap.add_argument("--size-mb", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3, help="rounds, each running every mode once (best kept)")
    ap.add_argument("--incremental", action="store_true", help="also time rollout-by-rollout judging")
    ap.add_argument("--no-pure", action="store_true", help="leave out the pure-Python check (~60 x grep each round)")
    ap.add_argument(
        "--scenario",
        default="healthy",
        help="the made log: a broken run held to its end (e.g. gap-jump), see make_big_log",
    )
    ap.add_argument(
        "--anchored",
        type=float,
        default=0.0,
        help="the made log: this share of its SGLang noise lines carry an anchor (see make_big_log)",
    )
    a = ap.parse_args()
    tag = ("" if a.scenario == "healthy" else f"_{a.scenario}") + (f"_anchored{a.anchored:g}" if a.anchored else "")
    path = a.file or f"/tmp/grpo_check_{a.size_mb}m{tag}.log"
    if not os.path.exists(path):
        print(f"writing {path} ({a.size_mb} MB)...", flush=True)
        make(path, a.size_mb * 1_000_000, scenario=a.scenario, anchored=a.anchored)
    size = os.path.getsize(path)
    warm_imports()
    runs = [
        ("check accelerated", "check", False),
        ("export CSV (accel.)", "export", False),
        ("export JSON (accel.)", "export-json", False),
        ("check pure", "check", True),
        ("parse only (accel.)", "parse", False),
    ]
    if a.no_pure:
        runs = [r for r in runs if not r[2]]
    if a.incremental:
        runs.append(("check rollout by rollout", "incremental", False))
    best, (grep_s, hits), times, grep_times, cpus = rounds(path, runs, a.repeat)
    print(f"file: {path}  {size / 1e6:.0f} MB;  best of {a.repeat} rounds, each run in turn (median in brackets)")
    print(f"grep -o raw_reward:      {grep_s:7.3f} s  ({hits:,} matches)  [{statistics.median(grep_times):.3f} s]")
    for name, _, _ in runs:
        r = best[name]
        accel = "" if r["accel"] or "pure" in name else "  (C scanner not built)"
        print(
            f"{name + ':':<25}{r['seconds']:7.3f} s  = {r['seconds'] / grep_s:5.1f} x grep  "
            f"[{statistics.median(times[name]):.3f} s]; peak RSS {r['peak_rss_mb']:.0f} MB{accel}"
        )
    # Each round's own ratio (the run over grep of that round): the machine's slow and fast
    # spells last minutes, and the best of each mode may come from different spells.
    print("per round, x grep of the same round: median (lowest-highest)")
    for name, _, _ in runs:
        ratios = [t / g for t, g in zip(times[name], grep_times)]
        print(f"  {name + ':':<23}{statistics.median(ratios):5.1f} x  ({min(ratios):.1f}-{max(ratios):.1f})")
    # CPU time (user + sys, both threads) swings far less with the machine's spells than wall time
    # does: a change of a few per cent in the work shows there first.
    print("process CPU (user + sys, all threads): lowest (median)")
    for name, _, _ in runs:
        print(f"  {name + ':':<23}{min(cpus[name]):6.3f} s  ({statistics.median(cpus[name]):.3f} s)")
    parse = best["parse only (accel.)"]
    n = parse["rollouts"] or 1
    judge = best["check accelerated"]["seconds"] - parse["seconds"]
    print(
        f"judging (check - parse): {judge:7.3f} s  = {judge / grep_s:5.1f} x grep; "
        f"{1e3 * judge / n:.3f} ms per rollout ({n:,} rollouts)"
    )
    print("bar: export <= 2.0 x grep (JSON <= 3.0 x), check <= 3.0 x grep (judging about <= 1 x)")


if __name__ == "__main__":
    main()
