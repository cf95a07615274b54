"""Readable alert lists (issue #40, item 3): a sign that opens and clears again and again on one
rule and signal is one entry with its count and spans, in `check` text and JSON, in `tail` (a
`flapping` object) and in the dashboard's alert pane; `check --all` lists every raise."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from grpo_tui import cli
from grpo_tui.judge.engine import Alert, group_alerts
from grpo_tui.simulate import generate

_CUT = re.compile(r"(rollout (\d+): \{.*?'rollout/truncated': )([0-9.e-]+)")


def write_flapping(path: Path) -> Path:
    """A healthy run whose cut share swings across the top of its band every 8 rollouts from
    rollout 20 on: the out-of-range warning opens and clears 37 times."""
    out = []
    for _, line in generate("healthy", 600, 4):
        m = _CUT.search(line)
        if m and int(m.group(2)) >= 20:
            v = 0.7 if (int(m.group(2)) // 8) % 2 == 0 else 0.2
            line = line[: m.start(3)] + repr(v) + line[m.end(3) :]
        out.append(line)
    path.write_text("\n".join(out) + "\n")
    return path


@pytest.fixture(scope="module")
def flapping(tmp_path_factory) -> Path:
    return write_flapping(tmp_path_factory.mktemp("flap") / "flap.log")


def _run(capsys, *argv: str) -> tuple[int, str]:
    code = cli.main(list(argv))
    return code, capsys.readouterr().out


def test_check_text_lists_the_sign_once_with_its_count(flapping, capsys):
    code, out = _run(capsys, "check", str(flapping))
    assert code == 1
    lines = out.splitlines()
    assert len(lines) <= 25
    (head,) = [ln for ln in lines if ln.startswith("  [WARNING]")]
    assert head.startswith("  [WARNING] out-of-range (cut share) 37× between rollouts 22 and 594, open now: cut share")
    assert "37 in all, --all lists each" in out
    code, every = _run(capsys, "check", "--all", str(flapping))
    assert code == 1 and sum(ln.startswith("  [WARNING]") for ln in every.splitlines()) == 37


def test_check_json_gives_count_and_spans_and_all_gives_each(flapping, capsys):
    _, out = _run(capsys, "check", "--json", str(flapping))
    (group,) = json.loads(out)["alerts"]
    assert group["rule"] == "out-of-range" and group["signal"] == "truncated" and group["count"] == 37
    spans = group["spans"]
    assert len(spans) == 37 and spans[0] == [22, 28] and spans[-1][1] is None
    assert all(a[1] is not None and a[1] < b[0] for a, b in zip(spans, spans[1:]))
    assert group["rollout"] == spans[-1][0]  # the latest raise's object
    _, out = _run(capsys, "check", "--json", "--all", str(flapping))
    every = json.loads(out)["alerts"]
    assert len(every) == 37 and all("count" not in a for a in every)
    assert sorted([a["rollout"], a["cleared_at"]] for a in every) == spans


def test_tail_folds_the_raises_into_flapping_objects(flapping, capsys):
    _, out = _run(capsys, "tail", "--replay", "0", str(flapping))
    objs = [json.loads(x) for x in out.splitlines()]
    alerts = [o for o in objs if o["type"] in ("alert", "cleared")]
    flaps = [o for o in objs if o["type"] == "flapping"]
    assert len(alerts) == 4  # the first two raises and their clears
    assert [f["count"] for f in flaps] == [3, 4, 8, 16, 32]
    assert all(f["first_rollout"] == 22 and f["signal"] == "truncated" and f["open"] for f in flaps)
    (summary,) = [o for o in objs if o["type"] == "summary"]
    assert [(a["rule"], a["count"], a["rollout"]) for a in summary["alerts"]] == [("out-of-range", 37, 22)]


def _alert(seq: int, rule: str, sev: str, start: int, cleared: int | None, signal: str | None = None) -> Alert:
    a = Alert(rule, sev, start, f"{rule} at {start}", "check", "meaning", {}, signal=signal, seq=seq)
    a.active, a.cleared_at = cleared is None, cleared
    return a


def test_groups_keep_severities_apart_and_the_report_order():
    alerts = [
        _alert(1, "out-of-range", "warning", 10, 14, "truncated"),
        _alert(2, "gap-jump", "critical", 12, None),
        _alert(3, "out-of-range", "warning", 20, None, "truncated"),
        _alert(4, "out-of-range", "warning", 21, 25, "length"),
        _alert(5, "non-finite", "warning", 30, 33),
        _alert(6, "non-finite", "critical", 40, 43),
    ]
    order = sorted(alerts, key=lambda a: (not a.active, a.severity != "critical", -a.seq))
    groups = group_alerts(order)
    assert [(g.latest.rule, g.latest.signal, g.severity, g.count) for g in groups] == [
        ("gap-jump", None, "critical", 1),
        ("out-of-range", "truncated", "warning", 2),
        ("non-finite", None, "critical", 1),
        ("non-finite", None, "warning", 1),
        ("out-of-range", "length", "warning", 1),
    ]
    assert groups[1].spans == [(10, 14), (20, None)] and groups[1].words() == "2× between rollouts 10 and 20, open now"
    assert groups[0].words() == ""
