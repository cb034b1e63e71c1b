"""The package's layering (docs/architecture.md): no import circles, the engine never imports a front
end, only the language server imports pygls/lsprotocol, torch is imported only by code that runs in
the user's interpreter. Each rule is also shown to fail on a small synthetic package."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.architecture.imports import Layering, cycles, graph, violations
from tests.conftest import REPO

PACKAGE_ROOT = REPO / "server" / "rootrank"

ROOTRANK = Layering(
    package="rootrank",
    adapters=frozenset({"rootrank.cli", "rootrank.lsp", "rootrank.__main__"}),
    editor_package="rootrank.lsp",
    editor_only=frozenset({"pygls", "lsprotocol"}),
    user_env_only=frozenset({"torch", "transformers", "peft", "trl", "accelerate", "deepspeed"}),
    user_env_packages=frozenset({"rootrank.measure.probe"}),
)


def test_rootrank_holds_to_its_layering() -> None:
    assert violations(PACKAGE_ROOT, ROOTRANK) == []


def test_the_graph_sees_the_real_package() -> None:
    edges = graph(PACKAGE_ROOT, "rootrank")
    assert "rootrank.diagnose.select" in edges
    assert "rootrank.diagnose.parts" in edges["rootrank.diagnose.select"]
    assert any(target.startswith("rootrank.check") for target in edges["rootrank.cli"]) or any(
        "check" in m for m in edges)


def _write(root: Path, files: dict[str, str]) -> Path:
    for relative, text in files.items():
        path = root / "pkg" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root / "pkg"


SYNTHETIC = Layering(package="pkg", adapters=frozenset({"pkg.cli", "pkg.lsp"}), editor_package="pkg.lsp",
                     editor_only=frozenset({"pygls", "lsprotocol"}), user_env_only=frozenset({"torch"}),
                     user_env_packages=frozenset({"pkg.probe"}))

CLEAN = {
    "__init__.py": "",
    "engine/__init__.py": "from pkg.engine.core import run\n",
    "engine/core.py": "from pkg import records\n\ndef run(): return records\n",
    "records.py": "X = 1\n",
    "cli.py": "from pkg.engine import run\n",
    "lsp/__init__.py": "",
    "lsp/server.py": "import pygls\nfrom lsprotocol import types\nfrom pkg.lsp import hover\n",
    "lsp/hover.py": "from pkg.engine.core import run\n",
    "probe.py": "import torch\n",
}


def test_a_clean_synthetic_package_passes(tmp_path: Path) -> None:
    assert violations(_write(tmp_path, CLEAN), SYNTHETIC) == []


@pytest.mark.parametrize(("change", "expected"), [
    ({"records.py": "from pkg.engine.core import run\n"}, "import circle: pkg.engine.core -> pkg.records"),
    # a circle that only type checkers see is still a circle
    ({"lsp/hover.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.lsp.server import S\n"},
     "import circle: pkg.lsp.hover -> pkg.lsp.server"),
    # relative imports, and an import inside a function
    ({"records.py": "def f():\n    from .engine import core\n"},
     "import circle: pkg.engine -> pkg.engine.core -> pkg.records"),
    ({"engine/core.py": "from pkg.cli import main\n"}, "engine module pkg.engine.core imports the front end pkg.cli"),
    ({"engine/core.py": "from pkg.lsp.hover import x\n"},
     "engine module pkg.engine.core imports the front end pkg.lsp.hover"),
    ({"cli.py": "import lsprotocol.types\n"}, "pkg.cli imports lsprotocol (only pkg.lsp may)"),
    ({"engine/core.py": "from pygls.server import Server\n"}, "pkg.engine.core imports pygls (only pkg.lsp may)"),
    ({"engine/core.py": "import torch.nn\n"}, "pkg.engine.core imports torch, which lives only in the user's environment"),
])
def test_each_broken_rule_is_reported(tmp_path: Path, change: dict[str, str], expected: str) -> None:
    assert expected in violations(_write(tmp_path, {**CLEAN, **change}), SYNTHETIC)


def test_cycles_finds_every_component() -> None:
    edges = {"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"e"}, "e": {"c"}, "f": {"a"}}
    assert cycles(edges) == [["a", "b"], ["c", "d", "e"]]
