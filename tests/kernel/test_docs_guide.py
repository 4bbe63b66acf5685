"""docs/plugin-authors.md cannot drift: its python code blocks run here, in order, in one
namespace, as a reader would paste them."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

GUIDE = Path(__file__).parents[2] / "docs" / "plugin-authors.md"
BLOCK = re.compile(r"^```python\n(.*?)^```$", re.S | re.M)


def python_blocks() -> list[tuple[int, str]]:
    text = GUIDE.read_text("utf-8")
    return [(text.count("\n", 0, match.start()) + 2, match.group(1)) for match in BLOCK.finditer(text)]


def test_the_guide_has_code_to_run():
    assert len(python_blocks()) >= 8


def test_every_python_block_of_the_guide_runs(monkeypatch):
    # a real module, as a reader's file would be (dataclasses look their module up)
    module = types.ModuleType("plugin_authors_guide")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    for line, code in python_blocks():
        # the guide's own line numbers, so a failure points into the guide; no
        # `from __future__` inherited from this file
        exec(compile("\n" * (line - 1) + code, str(GUIDE), "exec", dont_inherit=True), module.__dict__)
