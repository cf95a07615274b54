"""The judge's words: one age format (output.fmt_age) for alerts and the run's state, and a
crash named by its cause."""

from __future__ import annotations

from grpo_tui.judge.wording import crash_headline, cut_words, event_label, strip_prefixes
from grpo_tui.lines.records import Event
from grpo_tui.output import fmt_age


def test_one_age_format_from_seconds_to_days():
    assert [fmt_age(s) for s in (-3, 40, 89, 90, 45 * 60, 95 * 60, 3.5 * 3600, 47 * 3600, 3 * 86400)] == [
        "0 s",
        "40 s",
        "89 s",
        "2 min",
        "45 min",
        "1.6 h",
        "3.5 h",
        "47.0 h",
        "3.0 d",
    ]


def test_a_crash_is_named_by_its_cause_else_by_its_exception_line():
    oom = Event("traceback", None, None, 9, "x", lines=["torch.OutOfMemoryError: CUDA out of memory. Tried"])
    assert crash_headline(oom, None) == "CUDA out of memory"
    plain = Event("traceback", None, None, 9, "\x1b[36m(Actor pid=7)\x1b[0m ValueError: " + "word " * 60)
    got = crash_headline(plain, None)
    assert got.startswith("ValueError: word") and got.endswith(" …") and len(got) <= 162
    assert event_label(Event("nccl_timeout", None, None, 1, "")) == "NCCL watchdog timeout"
    assert event_label(Event("other_kind", None, None, 1, "")) == "other_kind"
    assert strip_prefixes("12: > (A pid=3) boom") == "boom"
    assert cut_words("short", 10) == "short"
