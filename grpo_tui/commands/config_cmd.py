"""`grpo-tui config [--config FILE]`: the effective settings and where each came from;
`--init [--force]`: a commented starter file, written atomically, never over one without --force."""

from __future__ import annotations

import os
import sys

from ..config import STARTER, ConfigError, default_path, describe, resolve
from ..lines.files import InputError
from ..output import write_text_atomic


def run(args) -> int:
    if args.init:
        path = args.config or default_path()
        if os.path.lexists(path) and not args.force:
            raise InputError(f"{path}: already exists (--force replaces it)")
        try:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        except OSError as exc:
            raise InputError(f"{path}: cannot write: {exc.strerror or exc}") from None
        write_text_atomic(path, STARTER)
        print(f"wrote {path}")
        return 0
    try:
        settings = resolve("config", args)
    except ConfigError as exc:
        print(f"grpo-tui config: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(describe(settings))
    return 0
