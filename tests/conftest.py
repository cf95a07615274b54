"""Shared fixtures: the byte-exact sample log from the docs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
# A byte-exact copy of a real Miles log excerpt ships with the tests (docs/log-format.md §9), so a clean clone
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
def _no_user_settings(monkeypatch, tmp_path_factory):
    """A developer's own config file, notify state or GRPO_TUI_* variables must never change a
    test's outcome (nor a test post to their Slack): fresh XDG folders, none of our variables,
    and no proxy for the local receivers.  Subprocesses inherit this environment."""
    base = tmp_path_factory.mktemp("xdg")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(base / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(base / "state"))
    for var in ("GRPO_TUI_NOTIFY", "GRPO_TUI_NOTIFY_FORMAT", "GRPO_TUI_NOTIFY_ON", "GRPO_TUI_THEME"):
        monkeypatch.delenv(var, raising=False)
    for var in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)


@_pytest_ui.fixture(autouse=True)
def _ui_stable_env(monkeypatch):
    """NO_COLOR / TEXTUAL_THEME / GRPO_TUI_ASCII change what the dashboard draws."""
    for var in ("NO_COLOR", "TEXTUAL_THEME", "GRPO_TUI_ASCII"):
        monkeypatch.delenv(var, raising=False)


# --- markers: `ui` (drives a Textual app or the browser) and `accel` (needs the C scanner) ---
UI_MODULES = {"test_serve"}


def pytest_collection_modifyitems(items):
    """Mark `ui` every test that runs the dashboard (Pilot `run_test`, `snap_compare`) or the
    browser, so CI's pure-path pass can run them serially, apart from the rest (-m ui / -m "not ui":
    together the whole suite)."""
    for item in items:
        mod = item.module.__name__.rsplit(".", 1)[-1] if item.module else ""
        fn = getattr(item, "function", None)
        code = getattr(fn, "__code__", None)
        if (
            mod in UI_MODULES
            or mod.startswith("test_ui_")
            or "snap_compare" in getattr(item, "fixturenames", ())
            or (code is not None and "run_test" in code.co_names)
        ):
            item.add_marker(_pytest_ui.mark.ui)
