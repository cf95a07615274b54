"""Shared fixtures: the byte-exact sample log from the docs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
# A byte-exact copy of shared/docs/miles-log-sample.log ships with the tests, so a clean clone
# needs nothing beside it.
SAMPLE_LOG = Path(os.environ.get("GRPO_TUI_SAMPLE_LOG", str(FIXTURES / "miles-log-sample.log")))


@pytest.fixture(scope="session")
def sample_path() -> Path:
    """miles-log-sample.log (tests/fixtures, or GRPO_TUI_SAMPLE_LOG)."""
    path = SAMPLE_LOG if SAMPLE_LOG.exists() else FIXTURES / "miles-log-sample.log"
    if not path.exists():
        pytest.skip("miles-log-sample.log not found")
    return path


@pytest.fixture(scope="session")
def sample_lines(sample_path: Path) -> list[str]:
    """The sample's physical lines, split on '\\n' only (a '\\r' stays inside its line)."""
    data = sample_path.read_bytes().decode("utf-8")
    lines = data.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


# --- UI tests (grpo_tui/ui): deterministic environment for Pilot and snapshot tests ---
import pytest as _pytest_ui


@_pytest_ui.fixture(autouse=True)
def _ui_stable_env(monkeypatch):
    """NO_COLOR / TEXTUAL_THEME / GRPO_TUI_ASCII change what the dashboard draws."""
    for var in ("NO_COLOR", "TEXTUAL_THEME", "GRPO_TUI_ASCII"):
        monkeypatch.delenv(var, raising=False)
