"""The config loader: a good file, unknown keys and wrong types as FILE:LINE, the precedence
defaults < file < environment < flags, and a starter file that loads as written."""

from __future__ import annotations

import argparse

import pytest

from grpo_tui.config import STARTER, ConfigError, apply, resolve

GOOD = """\
theme = "light"
ranges = "r.toml"
ended_after = "12h"

[notify]
urls = ["https://hooks.slack.com/services/A/B/C", { url = "https://ntfy.sh/t0p", format = "ntfy" }]
on = ["critical", "finished"]

[serve]
port = 9000
"""


def _args(**kw) -> argparse.Namespace:
    base = dict(config=None, no_config=False, theme=None, ranges=None, ended_after=None, notify=None)
    base.update(notify_format=None, notify_on=None, baseline=None, on_critical=None, host=None, port=None)
    return argparse.Namespace(**{**base, **kw})


def _write(tmp_path, text: str):
    p = tmp_path / "config.toml"
    p.write_text(text, encoding="utf-8")
    return str(p)


def test_a_good_file_sets_the_arguments(tmp_path):
    path = _write(tmp_path, GOOD)
    args = _args(config=path)
    s = apply("check", args, environ={})
    assert args.ranges == str(tmp_path / "r.toml") and args.ended_after == 12 * 3600
    assert [(t.format, t.shown) for t in args.notify_targets] == [
        ("slack", "https://hooks.slack.com/…"),
        ("ntfy", "https://ntfy.sh/…"),
    ]
    assert args.notify_on == {"critical", "finished"}
    assert s.values["ranges"].source == f"{path}:2" and s.values["notify_on"].source == f"{path}:7"
    serve = _args(config=path)
    apply("serve", serve, environ={})
    assert (serve.host, serve.port, serve.theme) == ("127.0.0.1", 9000, "light")


@pytest.mark.parametrize(
    "text, line, words",
    [
        ('theme = "dark"\nthme = "x"\n', 2, "unknown key `thme`"),
        ('[notify]\nurls = ["https://x.example/a"]\nformat = "teams"\n', 3, "`format` must be one of"),
        ('[notify]\non = ["critical", "pager"]\n', 2, "unknown event 'pager'"),
        ('[notify]\nurls = "https://x.example/a"\n', 2, "`urls` must be a list"),
        ('[notify]\nurls = ["file:///etc/passwd"]\n', 2, "only http:// and https://"),
        ('ended_after = "5"\n', 1, "give a duration with its unit"),
        ("[serve]\nport = 70000\n", 2, "`port` must be an integer"),
        ("theme = 3\n", 1, "must be a non-empty string, not int"),
        ('[serve]\nhost = "a"\ntoken = "t"\n', 3, "unknown key `token` in [serve]"),
        ("theme = \n", 1, "invalid TOML"),
    ],
)
def test_faults_are_file_line_reason(tmp_path, text, line, words):
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError) as exc:
        resolve("dashboard", _args(config=path), environ={})
    msg = str(exc.value)
    assert msg.startswith(f"{path}:{line}: ") and words in msg, msg


def test_precedence_default_file_env_flag(tmp_path):
    path = _write(tmp_path, GOOD)
    env = {"GRPO_TUI_THEME": "ascii", "GRPO_TUI_NOTIFY": "https://a.example/x, http://127.0.0.1:9/y"}
    s = resolve("dashboard", _args(config=path), environ=env)
    assert s["theme"] == "ascii" and s.values["theme"].source == "env GRPO_TUI_THEME"
    assert [t.shown for t in s.targets] == ["https://a.example/…", "http://127.0.0.1:9/…"]
    assert s.values["notify_on"].source == f"{path}:7"  # still the file's
    s = resolve("dashboard", _args(config=path, theme="dark", notify=["https://b.example/z"]), environ=env)
    assert s["theme"] == "dark" and s.values["theme"].source == "flag --theme"
    assert [t.url for t in s.targets] == ["https://b.example/z"]
    s = resolve("dashboard", _args(no_config=True, config=path), environ=env)
    assert s["theme"] is None and s.targets == []  # --no-config: neither file nor environment
    with pytest.raises(ConfigError, match="GRPO_TUI_NOTIFY_ON: unknown event"):
        resolve("dashboard", _args(config=path), environ={"GRPO_TUI_NOTIFY_ON": "sometimes"})


def test_missing_files(tmp_path):
    s = resolve("check", _args(), environ={"XDG_CONFIG_HOME": str(tmp_path)})
    assert not s.found and s.path == str(tmp_path / "grpo-tui" / "config.toml")
    with pytest.raises(ConfigError, match="no such file"):
        resolve("check", _args(config=str(tmp_path / "nope.toml")), environ={})


def test_the_starter_file_loads_and_sets_nothing(tmp_path):
    s = resolve("dashboard", _args(config=_write(tmp_path, STARTER)), environ={})
    assert all(v.source == "default" for v in s.values.values())
