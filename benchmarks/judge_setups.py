"""Bulk judging across setups and broken shapes: where does a rule still run at every rollout?

check_speed.py measures one big K=1 Miles log; the rules' gates and column answers (judge/bulk.py)
must also keep judging cheap with K updates per rollout, other setups, and broken runs whose
alert stays open.  For each (scenario, setup) this simulates a log (cached in --dir), judges it
as `check` does (judge_path: parse, then bulk judging), and prints, from the same run:
  grep       `grep -o` of one metric on the file (the reference, as in check_speed.py)
  parse      judge_path(judging=False), best of --repeat
  judging    Pipeline.finish inside judge_path() (the bulk judging), best of --repeat, and per rollout
  rule runs  how many times each metric rule ran (its gate said maybe, no column answer held it):
             a rule near one run per rollout is one whose gate cannot tell
In-process times (no interpreter start, imports done): the figures compare judging between
setups; check_speed.py gives the whole-process ratios.

    python benchmarks/judge_setups.py                        # every setup, healthy, 3,000 rollouts
    python benchmarks/judge_setups.py --scenario no-signal off-policy --setup k4 --rollouts 2000
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._common import time_grep  # noqa: E402
from grpo_tui import pipeline  # noqa: E402
from grpo_tui.judge import rules  # noqa: E402
from grpo_tui.simulate import SCENARIOS, SETUPS, write_log  # noqa: E402


def _counted() -> collections.Counter:
    """Count each metric rule's runs (the module's name and METRIC_RULES both point at the
    counting wrapper: the gates look rules up by identity and by name)."""
    calls: collections.Counter = collections.Counter()
    wrapped = []
    for rule in rules.METRIC_RULES:

        def run(ctx, rule=rule):
            calls[rule.__name__] += 1
            return rule(ctx)

        run.__name__ = rule.__name__
        setattr(rules, rule.__name__, run)
        wrapped.append(run)
    rules.METRIC_RULES = tuple(wrapped)
    return calls


def _best(fn, repeat: int) -> tuple[float, object]:
    best, got = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        got = fn()
        best = min(best, time.perf_counter() - t)
    return best, got


def _timed_finish() -> list[float]:
    """Pipeline.finish's times (judge_path judges the deferred history there)."""
    times: list[float] = []
    finish = pipeline.Pipeline.finish

    def timed(self, *a, **k):
        t = time.perf_counter()
        try:
            return finish(self, *a, **k)
        finally:
            times.append(time.perf_counter() - t)

    pipeline.Pipeline.finish = timed
    return times


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", nargs="+", default=["healthy"], choices=sorted(SCENARIOS))
    ap.add_argument("--setup", nargs="+", default=sorted(SETUPS), choices=sorted(SETUPS))
    ap.add_argument("--rollouts", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dir", default="/tmp/grpo_judge_setups")
    args = ap.parse_args(argv)
    Path(args.dir).mkdir(parents=True, exist_ok=True)
    calls = _counted()
    finish_times = _timed_finish()
    print(
        f"{'scenario':16} {'setup':13} {'MB':>5} {'grep':>7} {'parse':>7} {'judging':>8} {'ms/rollout':>10}  rule runs"
    )
    for scen in args.scenario:
        for setup in args.setup:
            path = Path(args.dir) / f"{scen}_{setup}_{args.rollouts}_{args.seed}.log"
            if not path.exists():  # (K: the setup's, as `grpo-tui simulate --setup` writes it)
                write_log(
                    str(path),
                    scen,
                    args.rollouts,
                    args.seed,
                    setup=setup,
                    steps_per_rollout=SETUPS[setup].steps_per_rollout,
                )
            grep_s, _ = time_grep(str(path))
            parse_s, _ = _best(lambda: pipeline.judge_path(str(path), judging=False), args.repeat)
            calls.clear()
            finish_times.clear()
            _, pipe = _best(lambda: pipeline.judge_path(str(path)), args.repeat)
            n = max(1, len(pipe.store.current.ids))
            judging = min(finish_times)
            runs = ", ".join(
                f"{name.removeprefix('rule_')} {count // args.repeat}"
                for name, count in calls.most_common()
                if count // args.repeat
            )
            print(
                f"{scen:16} {setup:13} {path.stat().st_size / 1e6:5.0f} {grep_s:6.3f}s {parse_s:6.3f}s "
                f"{judging:7.3f}s {1000 * judging / n:10.3f}  {runs} (of {n} rollouts)"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
