"""The one pipeline: log lines -> parser -> store -> health engine, with the run's clocks.

`core.py` is the Pipeline itself (feeds, rounds, clocks, run state, the report every surface
reads); `whole_file.py` reads a whole file or stdin through it (judge_path, feed_file).
"""

from .core import (
    FATAL_EVENTS,
    FINISH_EVENTS,
    BulkMismatch,
    InputError,
    Pipeline,
    RunReport,
    RunState,
    Update,
    ended_after,
    set_ended_after,
)
from .whole_file import feed_file, judge_path, metric_runs, named_inputs, one_run, open_input, read_judged

__all__ = [
    "FATAL_EVENTS",
    "FINISH_EVENTS",
    "BulkMismatch",
    "InputError",
    "Pipeline",
    "RunReport",
    "RunState",
    "Update",
    "ended_after",
    "feed_file",
    "judge_path",
    "metric_runs",
    "named_inputs",
    "one_run",
    "open_input",
    "read_judged",
    "set_ended_after",
]
