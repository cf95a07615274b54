"""Reading: log lines -> metric records and events (pure)."""

import os


def pure_asked() -> bool:
    """GRPO_TUI_PURE set (but to "0"): the pure-Python path, the C scanner left unused
    (parse._load_scan, and prefetch.py, which starts the scanner's reader before parse is imported)."""
    return os.environ.get("GRPO_TUI_PURE", "") not in ("", "0")
