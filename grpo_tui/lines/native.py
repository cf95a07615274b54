"""The native seam: the one module that imports the optional C scanner (lines/_scan.c, its parts in
lines/csrc/, its types in _scan.pyi) and decides whether it is used.  SCAN is the module or None
(the pure-Python path: no compiler at install, GRPO_TUI_PURE=1, or a stale build); PACKED its
record-values type.  The layout of the tuples its heads come as is kept here, beside the constants
a build must share with the Python side."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from . import pure_asked
from .records import Event, MetricRecord

_REJOIN_PARTS = 8  # a wrapped header is looked for this many lines back (_scan.c: REJOIN_PARTS)
_SKIPPED_PER_SOURCE = 16  # skipped lines kept per source to find its newest time (_scan.c: PER_KEY)


# _scan.c's heads: what each field of a candidate's tuple is (enum H_*; see miles_head there) and
# what its message is (HEAD_*)
(
    _H_KEY,
    _H_ACTOR,
    _H_ACTOR_END,
    _H_PID,
    _H_PID_END,
    _H_DATE,
    _H_MS,
    _H_PROC,
    _H_PROC_END,
    _H_FILE,
    _H_FILE_END,
    _H_MSG,
    _H_MSG_END,
    _H_REPEATED,
    _H_TIME_END,
    _H_DAYS,
    _H_SOD,
    _H_MSV,
    _H_CLASS,
    _H_ROLE,
    _H_KIND,
    _H_KIND_END,
    _H_ID,
    _H_DICT,
    _H_END_B,
    _H_OWN,
    _H_KID,
    _H_ERR,
) = range(28)
_H_COUNT = 36  # a head of offsets: a tuple of this many ints (_scan.c's H_N)
_HEAD_OTHER, _HEAD_NOISE, _HEAD_METRIC, _HEAD_FT, _HEAD_QUIET, _HEAD_CKPT = 0, 1, 2, 3, 4, 5
# a head the scanner read whole comes ready (_scan.c: ready_head), told apart by its length:
# (key, pid, record fields) or (key, pid, error message or None, event fields); the fields are
# a tuple in the dataclass's order (checked in _load_scan), the object is made here in Python
_READY_METRIC, _READY_FT = 3, 4


def _load_scan():
    """The one place the noise scanner is chosen: the C accelerator (grpo_tui/lines/_scan.c)
    when it was built and GRPO_TUI_PURE is unset (or "0"), else None (the pure-Python path)."""
    if pure_asked():
        return None
    try:
        from . import _scan
    except ImportError:
        return None
    if (getattr(_scan, "REJOIN_PARTS", None), getattr(_scan, "PER_KEY", None)) != (_REJOIN_PARTS, _SKIPPED_PER_SOURCE):
        return None  # built from other constants (a stale build): its shortcuts would differ
    if not hasattr(_scan, "scan_raw_untimed"):
        return None  # a build older than LineParser.noise_times (a stale build too)
    if (getattr(_scan, "RECORD_FIELDS", None), getattr(_scan, "EVENT_FIELDS", None)) != (
        _field_names(MetricRecord),
        _field_names(Event),
    ):
        return None  # its ready heads' field tuples follow other classes (a stale build)
    return _scan


def _field_names(cls) -> tuple[str, ...]:
    return tuple(f.name for f in fields(cls))


_RECORD_FIELDS = len(fields(MetricRecord))


def ready_item(fields: tuple) -> MetricRecord | Event:
    """The MetricRecord or Event a ready head's field tuple stands for (told apart by length)."""
    return MetricRecord(*fields) if len(fields) == _RECORD_FIELDS else Event(*fields)


def ready_items(out: list, start: int) -> None:
    """The items _scan.c handed out from `start` on as field tuples (Fold.run), made into the
    MetricRecords and Events they stand for, in place."""
    out[start:] = [ready_item(t) for t in out[start:]]


SCAN = _load_scan()
PACKED = getattr(SCAN, "Packed", None)  # a record's values without a dict (LineParser.packed)


def unpack(rec: MetricRecord) -> dict:
    """The record's values as a dict, made and set on it when they came packed (see
    LineParser.packed): for Python code that reads a record the whole-file path made."""
    values: Any = rec.metrics
    if type(values) is PACKED:
        values = rec.metrics = values.dict()
    return values


# A source's deque of skipped lines (the newest _SKIPPED_PER_SOURCE).  A partial, not a def:
# Fold.run makes one for each source a quiet line or a header emptied (tens of thousands in a
