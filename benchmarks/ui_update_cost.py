#!/usr/bin/env python3
"""Cost of ONE new rollout arriving, at 100 vs 100,000 rollouts of history.

What it measures
    A healthy run (grpo_tui.simulate, no noise lines, ~5 physical lines per rollout) is
    simulated once for BLOCK rollouts and repeated with rollout/step ids and log times
    shifted, so a history of any length reads as one long run.  For each history length:

    (a) core: a Pipeline holding the history; time Pipeline.feed(lines of one rollout)
        (parse + store + health update), median over --new rollouts.
    (b) UI:  the dashboard (GrpoApp, headless run_test at 200x50, i.e. the wide layout
        with the side chart) holding the same history (the Pipeline's parser, store and
        engine, after (a)'s rollouts); in the app's own
        thread time  feed.feed_lines(one rollout) + _on_new_data() + refresh_view()
        ("update"), and separately the repaint Textual does afterwards ("paint": one
        pilot.pause(), which runs the compositor on the dirty widgets).

Output
    Median ms per new rollout for each length, and the ratio long/short.
    Bar (issue tracker): UI per-rollout update cost ratio 100k vs 100 <= 2.

Usage
    python benchmarks/ui_update_cost.py [--sizes 100 100000] [--new 30] [--size 200x50]
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from grpo_tui.pipeline import Pipeline
from grpo_tui.simulate import generate

BLOCK = 2000
_ID = re.compile(r"\b(rollout|perf|step|eval) (\d+): ")
_TS = re.compile(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(\.\d+)?")


def _block() -> tuple[list[str], list[list[str]], float]:
    """(head lines, lines grouped by rollout, seconds one block spans)."""
    pairs = list(generate("healthy", BLOCK, 1, noise_per_rollout=0))
    head = [line for _, line in pairs if line.startswith("EXEC:")]
    body = [(t, line) for t, line in pairs if not line.startswith("EXEC:")]
    span = body[-1][0] - body[0][0] + 60.0
    groups: list[list[str]] = []
    cur: list[str] = []
    last = None
    for _, line in body:
        m = re.search(r"- perf (\d+): \{'rollout/", line)  # the rollout manager's line opens a rollout
        if m and last is not None and int(m.group(1)) != last:
            groups.append(cur)
            cur = []
        if m:
            last = int(m.group(1))
        cur.append(line)
    groups.append(cur)
    return head, groups, span


def rollout_lines(groups: list[list[str]], span: float, n: int) -> list[str]:
    """The lines of rollout n: block rollout n % BLOCK with ids and log time shifted."""
    k, i = divmod(n, len(groups))
    lines = groups[i]
    if k == 0:
        return list(lines)
    shift_ids = k * len(groups)
    shift_t = timedelta(seconds=k * span)

    def ts(m: re.Match) -> str:
        t = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S") + shift_t
        return "[" + t.strftime("%Y-%m-%d %H:%M:%S") + (m.group(2) or "")

    out = []
    for line in lines:
        line = _ID.sub(lambda m: f"{m.group(1)} {int(m.group(2)) + shift_ids}: ", line)
        out.append(_TS.sub(ts, line, count=1))
    return out


def history(groups, span, head, n: int) -> list[list[str]]:
    return [head] + [rollout_lines(groups, span, r) for r in range(n)]


def build(batches: list[list[str]]) -> Pipeline:
    """The history, fed in big chunks (the engine judges the newest 64 rollouts of each)."""
    run = Pipeline()
    for b in batches:
        run.feed(b)
    return run


def bench_core(run: Pipeline, new: list[list[str]]) -> list[float]:
    out = []
    for lines in new:
        t = time.perf_counter()
        run.feed(lines)
        out.append(time.perf_counter() - t)
    return out


async def bench_ui(run: Pipeline, new: list[list[str]], size: tuple[int, int]):
    from grpo_tui.ui.app import GrpoApp

    feed = run  # the same history, the same pipeline
    app = GrpoApp(None, live=False)
    upd: list[float] = []
    paint: list[float] = []
    fed: list[float] = []
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        app.feed = feed
        app.state = "finished"
        app._on_new_data()  # non-live: refreshes the view at once
        await pilot.pause()
        await pilot.pause(0.2)
        for lines in new:
            t = time.perf_counter()
            app.feed.feed(lines)
            tf = time.perf_counter()
            app._on_new_data()  # -> refresh_view()
            t1 = time.perf_counter()
            fed.append(tf - t)
            await pilot.pause()  # the repaint of what changed
            t2 = time.perf_counter()
            upd.append(t1 - t)
            paint.append(t2 - t1)
        shown = app.rows[0].render().plain
        rollouts = len(app.feed.store.current.ids)
    return upd, paint, shown, rollouts, fed


def ms(xs: list[float]) -> float:
    return statistics.median(xs) * 1000


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 100_000])
    ap.add_argument("--new", type=int, default=30, help="new rollouts timed (median)")
    ap.add_argument("--size", default="200x50", help="terminal size for the UI part")
    args = ap.parse_args()
    w, h = (int(x) for x in args.size.split("x"))
    t0 = time.perf_counter()
    head, groups, span = _block()
    print(
        f"simulated a {BLOCK}-rollout block in {time.perf_counter() - t0:.1f} s "
        f"({sum(map(len, groups)) / len(groups):.1f} lines/rollout)"
    )
    res = {}
    for n in args.sizes:
        t0 = time.perf_counter()
        batches = history(groups, span, head, n)
        new = [rollout_lines(groups, span, n + i) for i in range(2 * args.new)]
        chunks = [batches[0]] + [sum(batches[i : i + 2000], []) for i in range(1, len(batches), 2000)]
        run = build(chunks)
        built = time.perf_counter() - t0
        core = bench_core(run, new[: args.new])
        upd, paint, shown, got, fed = asyncio.run(bench_ui(run, new[args.new :], (w, h)))
        assert got == n + 2 * args.new and len(run.store.segments) == 1, got  # one run, nothing lost
        res[n] = (
            ms(core),
            ms(upd),
            ms(paint),
            ms([a + b for a, b in zip(upd, paint)]),
            ms(fed),
            ms([a - b for a, b in zip(upd, fed)]),
        )
        print(
            f"{n:>7} rollouts (history built in {built:.1f} s): "
            f"core feed {res[n][0]:.2f} ms   UI update {res[n][1]:.2f} ms   "
            f"paint {res[n][2]:.2f} ms   UI total {res[n][3]:.2f} ms"
        )
        print(
            f"          UI update = Pipeline.feed {res[n][4]:.2f} ms (core, rollout by rollout) "
            f"+ _on_new_data/refresh_view {res[n][5]:.2f} ms"
        )
        print(f"          row 0 at the end: {shown!r}")
    if len(args.sizes) >= 2:
        a, b = args.sizes[0], args.sizes[-1]
        names = ("core feed", "UI update", "paint", "UI total", "  of which Pipeline.feed", "  of which refresh_view")
        print(f"ratio {b} / {a} rollouts (median per new rollout; bar: UI <= 2):")
        for i, name in enumerate(names):
            print(f"  {name:<26} {res[b][i] / res[a][i]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
