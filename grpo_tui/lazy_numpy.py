"""numpy for a module that may never need it: `np = LazyNumpy(globals())` stands for the module
until its first attribute is read, which imports numpy and puts it in that module's `np`.

Why: numpy's import is a large share of a command's start; filing a log into the store needs none
of it (store columns are arrays of doubles) and `export` of a common log reads its table
without it (store/rollout_table.py), while judging, the dashboard and the rarer cells import it
where they first reach for it.
"""

from __future__ import annotations

from typing import Any


class LazyNumpy:
    __slots__ = ("_into",)

    def __init__(self, into: dict) -> None:
        self._into = into

    def __getattr__(self, name: str) -> Any:
        import numpy

        self._into["np"] = numpy  # later reads of the module's np are numpy itself
        return getattr(numpy, name)
