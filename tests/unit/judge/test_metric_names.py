"""The metric names each framework logs for a signal (docs/health-signs.md §2) are exactly the
names grpo-tui reads for it (issue #40: aliases for every framework read), both ways: a name in
the table the code does not read, or one the code reads that the table does not list, fails."""

from __future__ import annotations

import re
from pathlib import Path

from grpo_tui.judge.rules.learning_signal import REWARD_STD
from grpo_tui.judge.rules.policy import ENTROPY, KL_REF
from grpo_tui.judge.signals import (
    ALL_ONE_RATIO,
    ALL_ZERO_RATIO,
    BY_ID,
    ZERO_STD_FRACTION,
    ZERO_STD_PREFIX,
)

DOC = Path(__file__).resolve().parents[3] / "docs" / "health-signs.md"
READ = {
    **{k: set(s.aliases) for k, s in BY_ID.items()},
    **{s.id: set(s.aliases) for s in (ENTROPY, KL_REF, REWARD_STD)},
}


def table() -> dict[str, dict[str, set[str]]]:
    """signal id -> framework column -> the names in its cell."""
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("## 2. The signals and their names") : text.index("## 3.")]
    out = {}
    for row in section.splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", row.strip().strip("|"))]  # (not at a \| in a cell)
        if not row.startswith("| ") or "`" not in cells[0]:
            continue
        sig = re.search(r"`([a-z_]+)`", cells[0]).group(1)
        frameworks = ("miles", "verl", "trl", "prime-rl", "openrlhf")
        out[sig] = {fw: set(re.findall(r"`([^`]+)`", cell)) for fw, cell in zip(frameworks, cells[2:7])}
    return out


def test_every_signal_has_a_row():
    assert set(table()) == set(READ)


def test_the_table_names_exactly_what_the_code_reads():
    for sig, cols in table().items():
        listed = set().union(*cols.values())
        if sig == "zero_std":  # a family of counts, and two share keys, read by signals.zero_std_parts
            assert listed == {
                ZERO_STD_PREFIX + "<r>",
                ALL_ZERO_RATIO,
                ALL_ONE_RATIO.rsplit("/", 1)[1],
                ZERO_STD_FRACTION,
            }
            continue
        assert listed == READ[sig], sig


def test_trl_kl_is_kl_to_the_reference_not_the_engine_mismatch():
    cols = table()
    assert "kl" in cols["kl_ref"]["trl"] and not cols["kl"]["trl"]
    assert "kl" not in READ["kl"]


def test_an_infinite_zero_std_count_is_no_group_count():
    """`count_0: inf` (a hostile or broken log) once crashed the groups lookup with OverflowError."""
    from grpo_tui.judge.signals import groups_of
    from grpo_tui.lines.parse import parse_lines
    from grpo_tui.store.metric_store import MetricStore

    lines = [
        f"rollout {i}: {{'rollout/raw_reward': 0.0, 'rollout/zero_std/count_0': inf, "
        f"'rollout/zero_std/all_zero_percentage': 0.5}}"
        for i in range(3)
    ]
    items, _ = parse_lines(lines)
    store = MetricStore()
    store.add(items)
    assert groups_of(store.current) is None
