"""False-alarm sweep: healthy and broken simulated runs over several training setups.

Runs >= 300 healthy runs over the setups of `grpo-tui simulate --setup` (the manual's own one,
7B on MATH, long reasoning, K = 4, heavy-tailed puzzles, plateaus, 240-rollout runs, and two
long-reasoning setups whose reward dips 0.04-0.12 for 8-32 rollouts while length grows; K = 1, 2
and 4), and every broken scenario on each setup (plus slow-drift variants of the trend
breaks), judges each with the default ranges exactly like `grpo-tui check`, and prints the
confusion table:

- healthy: runs with a false critical alert, runs with any warning alert, runs not OK;
- broken: runs caught by the scenario's own rule (critical), median / worst detection delay in
  rollouts after the onset, runs with an unrelated critical rule.

    python benchmarks/false_alarm_sweep.py                 # the full sweep (a few minutes)
    python benchmarks/false_alarm_sweep.py --quick         # the small version CI runs as tests
    python benchmarks/false_alarm_sweep.py --jobs 2 --setups manual,puzzles-3b --json out.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from grpo_tui.lines.parse import LineParser  # noqa: E402
from grpo_tui.simulate import SCENARIOS, SETUPS, generate  # noqa: E402
from grpo_tui.store.metric_store import MetricStore  # noqa: E402

BROKEN = [s for s in SCENARIOS if s != "healthy"]
# Trend breaks also run slowly: gap x1.035 a rollout (x3 in 32), grad norm x1.07 (x10 in 34),
# rollout time x1.014 (x2 in 48), length +1.5 % a rollout with reward -0.005.
SLOW = {"gap-rising": 0.3, "grad-norm-rising": 0.3, "rollout-slowdown": 0.1, "length-hacking": 0.5}
TIME_RULES = {"crashed", "engine-down", "no-steps", "stalled"}  # judged on events / clocks, not rollouts
HEALTHY_K = {"manual": (1, 2, 4), "plateau": (1, 2), "long": (1, 2)}


@dataclass
class Run:
    setup: str
    scenario: str
    seed: int
    k: int
    rollouts: int
    onset: int | None = None
    pace: float = 1.0
    critical: list[str] = field(default_factory=list)
    warning: list[str] = field(default_factory=list)
    status: str = "ok"
    caught: bool = False  # the scenario's own rule raised a critical alert
    own_at: int | None = None  # rollout at which it was first raised (None: before any rollout)
    early: bool = False  # own rule raised before the onset (a false alarm)
    seconds: float = 0.0
    ranges: str = "defaults"  # or "calibrated": bands from 3 healthy seeds of the same setup and K

    @property
    def label(self) -> str:
        return self.scenario + (" (slow)" if self.pace != 1.0 else "")


def judge_lines(lines, ranges=None):
    """Feed lines in batches through the one pipeline (as every reader does), then finish: the report."""
    from grpo_tui.pipeline import Pipeline

    pipe = Pipeline(ranges)
    for i in range(0, len(lines), 200):
        pipe.feed(lines[i : i + 200])
    pipe.finish()
    return pipe.report()


_CALIBRATED: dict = {}


def calibrated_ranges(setup: str, k: int, rollouts: int):
    """Bands from 3 healthy seeds of this setup and K, as `grpo-tui calibrate` would make them."""
    key = (setup, k, rollouts)
    if key not in _CALIBRATED:
        from grpo_tui.judge.ranges import RangeSet
        from grpo_tui.judge.seeds import seed_envelopes

        stores = []
        for seed in (900, 901, 902):
            parser, store = LineParser(), MetricStore()
            items = []
            for _, line in generate("healthy", rollouts, seed, steps_per_rollout=k, noise_per_rollout=0, setup=setup):
                items.extend(parser.feed(line))
            items.extend(parser.flush())
            store.add(items)
            stores.append(store)
        _CALIBRATED[key] = RangeSet(envelopes=seed_envelopes(stores).envelopes, path="calibrated")
    return _CALIBRATED[key]


def run_one(run: Run) -> Run:
    t = time.perf_counter()
    lines = [
        line
        for _, line in generate(
            run.scenario,
            run.rollouts,
            run.seed,
            steps_per_rollout=run.k,
            noise_per_rollout=2,
            onset=run.onset,
            setup=run.setup,
            pace=run.pace,
        )
    ]
    ranges = None
    if run.ranges == "calibrated":
        ranges = calibrated_ranges(run.setup, run.k, min(SETUPS[run.setup].rollouts, 100))
    rep = judge_lines(lines, ranges)
    run.critical = sorted({a.rule for a in rep.alerts if a.severity == "critical"})
    run.warning = sorted(
        {
            a.rule if a.rule != "out-of-range" else f"out-of-range:{a.signal}"
            for a in rep.alerts
            if a.severity == "warning"
        }
    )
    run.status = rep.status
    own = [a for a in rep.alerts if a.rule == run.scenario and a.severity == "critical"]
    if own:
        first = min(own, key=lambda a: a.seq)
        run.caught = True
        run.own_at = first.first_seen
        if run.onset is not None and run.scenario not in TIME_RULES and first.first_seen is not None:
            run.early = first.first_seen < run.onset - 1
    run.seconds = time.perf_counter() - t
    return run


def plan(
    quick: bool = False,
    setups: list[str] | None = None,
    healthy_per_setup: int | None = None,
    broken_seeds: int | None = None,
) -> list[Run]:
    names = setups or list(SETUPS)
    n_h = healthy_per_setup if healthy_per_setup is not None else (3 if quick else 45)
    n_b = broken_seeds if broken_seeds is not None else (1 if quick else 2)
    runs: list[Run] = []
    for name in names:
        su = SETUPS[name]
        ks = HEALTHY_K.get(name, (su.steps_per_rollout,))
        for i in range(n_h):
            seed = 1000 + i
            length = su.rollouts if not quick else min(su.rollouts, 80)
            runs.append(Run(name, "healthy", seed, ks[i % len(ks)], length))
        for j in range(n_b):
            seed = 2000 + j
            onset = min(su.rollouts // 3, 40)
            for sc in BROKEN:
                if quick and sc in TIME_RULES:
                    continue
                runs.append(Run(name, sc, seed, su.steps_per_rollout, min(su.rollouts, onset + 40), onset))
            for sc, pace in SLOW.items():
                if quick and sc != "rollout-slowdown" and j:
                    continue
                runs.append(Run(name, sc, seed, su.steps_per_rollout, onset + 64, onset, pace))
    return runs


def with_calibrated(runs: list[Run]) -> list[Run]:
    """The same runs judged a second time with calibrated ranges."""
    return runs + [
        Run(r.setup, r.scenario, r.seed, r.k, r.rollouts, r.onset, r.pace, ranges="calibrated") for r in runs
    ]


def sweep(runs: list[Run], jobs: int = 1) -> list[Run]:
    if jobs <= 1:
        return [run_one(r) for r in runs]
    from multiprocessing import Pool

    with Pool(jobs) as pool:
        return pool.map(run_one, runs, chunksize=2)


def summarise(done: list[Run]) -> dict:
    healthy = defaultdict(
        lambda: {"runs": 0, "false_critical": 0, "any_warning": 0, "not_ok": 0, "rules": defaultdict(int)}
    )
    broken = defaultdict(
        lambda: {"runs": 0, "caught": 0, "delays": [], "unrelated": 0, "early": 0, "rules": defaultdict(int)}
    )
    for r in done:
        if r.scenario == "healthy":
            h = healthy[r.setup]
            h["runs"] += 1
            h["false_critical"] += bool(r.critical)
            h["any_warning"] += bool(r.warning)
            h["not_ok"] += r.status != "ok"
            for rule in r.critical:
                h["rules"][rule] += 1
            continue
        b = broken[(r.label, r.setup)]
        b["runs"] += 1
        caught = r.caught and not r.early
        b["caught"] += caught
        b["early"] += r.early
        if caught and r.scenario not in TIME_RULES and r.own_at is not None:
            b["delays"].append(r.own_at - r.onset)
        other = [x for x in r.critical if x != r.scenario]
        b["unrelated"] += bool(other)
        for rule in other:
            b["rules"][rule] += 1
    return {"healthy": healthy, "broken": broken}


def _delay(ds: list[int]) -> str:
    if not ds:
        return "-"
    return f"{statistics.median(ds):g}/{max(ds)}"


def table(summary: dict, setups: list[str], mode: str = "defaults") -> str:
    out = []
    h = summary["healthy"]
    tot = {"runs": 0, "false_critical": 0, "any_warning": 0, "not_ok": 0}
    out.append(f"HEALTHY RUNS ({mode} ranges)")
    out.append(f"{'setup':<14}{'runs':>6}{'false crit':>12}{'any warn':>10}{'not OK':>8}  false-critical rules")
    for s in setups:
        if s not in h:
            continue
        row = h[s]
        for k in tot:
            tot[k] += row[k]
        rules = ", ".join(f"{k} x{v}" for k, v in sorted(row["rules"].items()))
        out.append(
            f"{s:<14}{row['runs']:>6}{row['false_critical']:>12}{row['any_warning']:>10}{row['not_ok']:>8}  {rules}"
        )
    out.append(f"{'total':<14}{tot['runs']:>6}{tot['false_critical']:>12}{tot['any_warning']:>10}{tot['not_ok']:>8}")
    out.append("")
    b = summary["broken"]
    labels = [lab for lab in dict.fromkeys(k[0] for k in b)]
    out.append(
        "BROKEN RUNS: caught by own rule / runs, median/worst delay (rollouts after onset); * = unrelated critical"
    )
    width = 17
    out.append(
        f"{'scenario':<26}"
        + "".join(f"{s[: width - 1]:>{width}}" for s in setups if any(k[1] == s for k in b))
        + f"{'all':>12}"
    )
    shown = [s for s in setups if any(k[1] == s for k in b)]
    misses = caught_all = runs_all = 0
    for lab in labels:
        cells = []
        c_tot = r_tot = 0
        for s in shown:
            row = b.get((lab, s))
            if not row:
                cells.append(f"{'':>{width}}")
                continue
            c_tot += row["caught"]
            r_tot += row["runs"]
            cell = f"{row['caught']}/{row['runs']} {_delay(row['delays'])}" + ("*" if row["unrelated"] else "")
            cells.append(f"{cell:>{width}}")
        caught_all += c_tot
        runs_all += r_tot
        misses += r_tot - c_tot
        out.append(f"{lab:<26}" + "".join(cells) + f"{f'{c_tot}/{r_tot}':>12}")
    out.append(f"caught {caught_all}/{runs_all} broken runs, missed {misses}")
    unrelated = defaultdict(int)
    for (lab, s), row in b.items():
        for rule, n in row["rules"].items():
            unrelated[f"{lab} on {s}: {rule}"] += n
    if unrelated:
        out.append("unrelated criticals: " + "; ".join(f"{k} x{v}" for k, v in sorted(unrelated.items())))
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="the small CI version")
    ap.add_argument("--setups", help="comma-separated setup names (default: all)")
    ap.add_argument("--healthy", type=int, help="healthy runs per setup (default 45; quick 3)")
    ap.add_argument("--broken-seeds", type=int, help="seeds per broken scenario and setup (default 2; quick 1)")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes (the machine is shared: keep it small)")
    ap.add_argument(
        "--calibrated",
        action="store_true",
        help="also judge every run with ranges calibrated from 3 healthy seeds of its setup",
    )
    ap.add_argument("--json", metavar="FILE", help="also write every run as JSON")
    args = ap.parse_args(argv)
    setups = args.setups.split(",") if args.setups else list(SETUPS)
    unknown = [s for s in setups if s not in SETUPS]
    if unknown:
        ap.error(f"unknown setup(s): {', '.join(unknown)} (known: {', '.join(SETUPS)})")
    runs = plan(args.quick, setups, args.healthy, args.broken_seeds)
    if args.calibrated:
        runs = with_calibrated(runs)
    t = time.perf_counter()
    done = sweep(runs, args.jobs)
    for mode in ("defaults", "calibrated"):
        part = [r for r in done if r.ranges == mode]
        if not part:
            continue
        n_h = sum(r.scenario == "healthy" for r in part)
        print(f"{len(part)} runs ({n_h} healthy, {len(part) - n_h} broken) over {len(setups)} setups, {mode} ranges\n")
        print(table(summarise(part), setups, mode))
        print()
    print(f"({time.perf_counter() - t:.0f} s)")
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(r) for r in done], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
