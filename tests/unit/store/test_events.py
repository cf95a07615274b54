"""EventLog keeps routine events as columns and gives back equal Events; every other event is
kept as the very object it was given.  A store's events are its segments' in order."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from grpo_tui.lines.records import Event
from grpo_tui.store.events import ROUTINE, EventLog
from grpo_tui.store.metric_store import MetricStore

_TEXT = st.text(max_size=12)
_DATA = st.dictionaries(
    st.sampled_from(["rollout", "ok", "elapsed_s", "path", "status"]),
    st.one_of(_TEXT, st.integers(-5, 5), st.none(), st.booleans()),
    max_size=3,
)


@st.composite
def _events(draw):
    data = dict(draw(_DATA))
    if draw(st.booleans()):
        data["after_rollout"] = draw(st.one_of(st.none(), st.integers(-(2**63), 2**64)))
    return Event(
        kind=draw(st.sampled_from([*ROUTINE, "traceback", "launch", "train_retry"])),
        time=draw(st.one_of(st.none(), _TEXT)),
        ts=draw(st.one_of(st.none(), st.floats(allow_nan=False), st.integers(0, 9))),
        line_no=draw(st.integers(0, 10**6)),
        text=draw(_TEXT),
        data=data,
        lines=draw(st.sampled_from([(), ["Traceback ...", "  File x"]])),
    )


@settings(max_examples=300, deadline=None)
@given(st.lists(_events(), max_size=30))
def test_events_come_back_as_they_went_in(events):
    log = EventLog()
    for ev in events:
        log.append(ev)
    assert len(log) == len(events) and bool(log) == bool(events)
    assert repr(list(log)) == repr(events)  # (repr: equal fields, types too)
    assert [log[i] for i in range(-len(events), 0)] == events[-len(events) :]
    assert log[1:3] == events[1:3]
    for got, ev in zip(log, events):
        if ev.kind not in ROUTINE or ev.lines:
            assert got is ev  # kept as it came (a traceback's data may still change)
    assert list(log.kinds_after()) == [(ev.kind, ev.data.get("after_rollout")) for ev in events]


def test_routine_events_are_kept_as_columns():
    log = EventLog()
    for r in range(100):
        log.append(
            Event("weight_update_end", "t", 1.0 + r, r, "ft ... phase=end ok=true", {"ok": "true", "after_rollout": r})
        )
    assert all(type(x) is tuple for x in log._items)
    assert log[42] == Event(
        "weight_update_end", "t", 43.0, 42, "ft ... phase=end ok=true", {"ok": "true", "after_rollout": 42}
    )


def test_store_events_are_the_segments_in_order():
    store = MetricStore()
    items = [
        Event("launch", None, None, 1, "EXEC: a", {"flags": {}}),
        Event("weight_update_start", None, 1.0, 2, "ft", {"rollout": "0"}),
    ]
    store.add(items)
    from grpo_tui.lines.records import MetricRecord

    store.add([MetricRecord("rollout", 0, {"a": 1.0}, proc="p")])
    store.add([Event("launch", None, None, 3, "EXEC: b", {"flags": {}}), Event("checkpoint_start", None, 2.0, 4, "c")])
    assert len(store.segments) == 2
    assert store.events == [*store.segments[0].events, *store.segments[1].events]
    assert [e.kind for e in store.events] == ["launch", "weight_update_start", "launch", "checkpoint_start"]
    assert store.events[-1].kind == "checkpoint_start" and store.events[1].data["after_rollout"] is None
