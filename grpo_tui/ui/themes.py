"""Theme files (themes/*.toml) -> Textual Theme objects, with built-in fallbacks.

Why files: users can add a palette without code; the high-contrast one is colour-blind safe.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from textual.theme import Theme

THEME_DIR = Path(__file__).resolve().parents[2] / "themes"
ORDER = ("grpo-dark", "grpo-light", "grpo-high-contrast", "grpo-ascii")
ALIASES = {
    "dark": "grpo-dark",
    "light": "grpo-light",
    "high-contrast": "grpo-high-contrast",
    "hc": "grpo-high-contrast",
    "ascii": "grpo-ascii",
}

_BUILTIN = {
    "grpo-dark": dict(
        dark=True,
        primary="#5fafff",
        secondary="#87afd7",
        accent="#d7af5f",
        foreground="#d0d0d0",
        background="#121212",
        surface="#1c1c1c",
        panel="#262626",
        success="#5faf5f",
        warning="#d7af00",
        error="#ff5f5f",
    ),
    "grpo-light": dict(
        dark=False,
        primary="#005faf",
        secondary="#5f87af",
        accent="#af5f00",
        foreground="#1c1c1c",
        background="#f5f5f5",
        surface="#e4e4e4",
        panel="#d0d0d0",
        success="#008700",
        warning="#af8700",
        error="#d70000",
    ),
    "grpo-high-contrast": dict(
        dark=True,
        primary="#56b4e9",
        secondary="#0072b2",
        accent="#f0e442",
        foreground="#ffffff",
        background="#000000",
        surface="#000000",
        panel="#303030",
        success="#56b4e9",
        warning="#e69f00",
        error="#d55e00",
    ),
    "grpo-ascii": dict(
        dark=True,
        primary="#5555ff",
        secondary="#0000aa",
        accent="#aaaa00",
        foreground="#aaaaaa",
        background="#000000",
        surface="#000000",
        panel="#555555",
        success="#00aa00",
        warning="#aaaa00",
        error="#aa0000",
        glyphs="ascii",
    ),
}
_FIELDS = (
    "primary",
    "secondary",
    "accent",
    "foreground",
    "background",
    "surface",
    "panel",
    "success",
    "warning",
    "error",
    "dark",
)


def _make(name: str, spec: dict) -> Theme:
    kw = {k: spec[k] for k in _FIELDS if k in spec}
    glyphs = str(spec.get("glyphs", "blocks"))
    return Theme(name=name, variables={"grpo-glyphs": glyphs}, **kw)


def load_themes(folder: Path = THEME_DIR) -> list[Theme]:
    """Built-ins overlaid by whatever valid *.toml the themes folder holds."""
    specs: dict[str, dict] = {k: dict(v) for k, v in _BUILTIN.items()}
    if folder.is_dir():
        for f in sorted(folder.glob("*.toml")):
            try:
                data = tomllib.loads(f.read_text(encoding="utf-8"))
                name = str(data.get("name") or ("grpo-" + f.stem))
                _make(name, data)  # validate before accepting
                specs[name] = data
            except Exception:  # a broken theme file must not stop the app
                continue
    return [_make(n, s) for n, s in specs.items()]


def resolve(name: str | None) -> str:
    if not name:
        return "grpo-dark"
    return ALIASES.get(name, name)


def uses_ascii(theme: Theme | None) -> bool:
    return bool(theme and theme.variables.get("grpo-glyphs") == "ascii")
