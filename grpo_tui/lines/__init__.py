"""Reading: log lines -> metric records and events (pure)."""

import os


def pure_asked() -> bool:
    """GRPO_TUI_PURE set (but to "0"): the pure-Python path, the C scanner left unused
    (native._load_scan, the one module that imports the C scanner)."""
    return os.environ.get("GRPO_TUI_PURE", "") not in ("", "0")
