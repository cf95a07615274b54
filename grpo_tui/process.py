"""How a grpo-tui process starts and ends: the process-wide settings of a one-shot command.

The only place that changes the interpreter's own behaviour (the collector, the teardown); the
CLI calls it, commands mark what they keep.  Timings are in benchmarks/README.md.
"""

from __future__ import annotations

import gc
import os
import sys
from typing import NoReturn

# Commands that leave the process at once when done (see leave()), their collector off (one_shot).
QUICK_EXIT = ("check", "export", "calibrate")
# ... and the dashboard, which leaves at once too, its collector on while it runs (see leave()).
LEAVE_AT_ONCE = QUICK_EXIT + ("dashboard",)


def one_shot(cmd: str) -> None:
    """A process that runs one `check`, `export` or `calibrate` and then leaves (leave()) runs
    without automatic cyclic garbage collection: reading a log keeps millions of objects and
    makes no cycles (tests/test_no_cycles.py), so each collection walked them for nothing.
    main() alone (tests, other callers) leaves the collector as it is."""
    global _ONE_SHOT
    if cmd in QUICK_EXIT:
        gc.disable()
        _ONE_SHOT = True


_ONE_SHOT = False  # one_shot ran: the process leaves by leave() (os._exit) once the command is done
_SPARED: list = []


def spare(obj) -> None:
    """Keep `obj` (a judged log) to the end of a one_shot process, which leaves without freeing
    it object by object after its output is written.  Elsewhere nothing is kept."""
    if _ONE_SHOT:
        _SPARED.append(obj)


def leave(code: int, cmd: str) -> NoReturn:
    """Exit with `code`; after `check`, `export`, `calibrate` and the dashboard by os._exit once
    stdout and stderr are flushed, without the interpreter's teardown: nobody waits for it, and
    when the terminal went away Textual's input thread never ended and the exit hung on it.
    `serve`, `tail` and `simulate` exit normally."""
    if cmd in LEAVE_AT_ONCE:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError, AttributeError):  # main() has said so already
                pass
        os._exit(code)
    sys.exit(code)
