"""Build hook for the optional C accelerator (grpo_tui/lines/_scan.c); metadata is in pyproject.toml.

optional=True: without a working compiler the extension is skipped and the pure-Python parser
runs (GRPO_TUI_PURE=1 forces that path even when the extension is built)."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("grpo_tui.lines._scan", ["grpo_tui/lines/_scan.c"], optional=True)])
