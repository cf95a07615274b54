"""Build hook for the optional C accelerator (grpo_tui/lines/_scan.c); metadata is in pyproject.toml.

optional=True: without a working compiler the extension is skipped and the pure-Python parser
runs (GRPO_TUI_PURE=1 forces that path even when the extension is built)."""

import compileall
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

PACKAGE = Path(__file__).resolve().parent / "grpo_tui"


class BuildExtAndBytecode(build_ext):
    """The extension, and for an editable install (built in place) the package's bytecode once.
    pip byte-compiles a regular install but not an editable one: where PYTHONDONTWRITEBYTECODE
    is set (containers, CI) every command then compiled every module again, ~70 ms of each
    `check`.  A .pyc whose source changed since is not used (Python checks its mtime and size)."""

    def run(self) -> None:
        super().run()
        if self.inplace or getattr(self, "editable_mode", False):
            compileall.compile_dir(str(PACKAGE), quiet=1)


# _scan.c includes its parts (csrc/*.h): one translation unit; `depends` rebuilds it when a part changes
PARTS = sorted(str(p.relative_to(PACKAGE.parent)) for p in (PACKAGE / "lines" / "csrc").glob("*.h"))

setup(
    ext_modules=[Extension("grpo_tui.lines._scan", ["grpo_tui/lines/_scan.c"], depends=PARTS, optional=True)],
    cmdclass={"build_ext": BuildExtAndBytecode},
)
