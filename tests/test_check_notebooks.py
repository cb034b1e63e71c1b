"""Notebooks: code cells read as one module, IPython-only lines kept out of the parser, findings and
fixes in (cell, line) positions, fixes written back into the cells, bad notebooks reported not raised."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from rootrank.check import SYNTAX_ERROR, check_source, fix_source
from rootrank.check.notebook import notebook_module, parse_notebook


def _notebook(*cells: tuple[str, str]) -> str:
    return json.dumps({"cells": [{"cell_type": kind, "metadata": {}, "source": text.splitlines(keepends=True),
                                  **({"outputs": [], "execution_count": None} if kind == "code" else {})}
                                 for kind, text in cells],
                       "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1) + "\n"


NOTEBOOK = _notebook(
    ("markdown", "# title"),
    ("code", "!pip install torch\nimport torch\nfrom torch.utils.checkpoint import checkpoint"),
    ("code", "%%bash\necho not python ( at all"),
    ("code", "def f(block, x):\n    %time y = 1\n    torch?\n    return checkpoint(block, x)\nfiles = !ls"),
)


def test_cells_become_one_module_with_line_numbers_kept() -> None:
    module = notebook_module(parse_notebook(NOTEBOOK))
    assert [(s.cell, s.lines) for s in module.cells] == [(2, 3), (4, 5)]  # the %%bash cell is left out
    compile(module.text, "nb", "exec")
    assert module.locate(module.cells[1].first_line + 3) == (4, 4)


def test_findings_and_fixes_are_in_cell_positions() -> None:
    (finding,) = check_source(NOTEBOOK, "nb.ipynb")
    assert (finding.cell, finding.line, finding.column) == (4, 4, 12)
    assert finding.fix is not None and finding.fix.edits[0].line == 4
    fixed, count = fix_source(NOTEBOOK, "nb.ipynb")
    assert count == 1
    cells = json.loads(fixed)["cells"]
    assert "".join(cells[3]["source"]).splitlines()[3] == "    return checkpoint(block, x, use_reentrant=True)"
    assert "".join(cells[3]["source"]).splitlines()[1] == "    %time y = 1"  # magics are kept as they were
    assert cells[2] == json.loads(NOTEBOOK)["cells"][2]
    assert fix_source(fixed, "nb.ipynb")[0] == fixed


def test_a_broken_notebook_is_one_finding_not_a_crash() -> None:
    for text in ("{not json", '{"cells": 3}', "[]"):
        (finding,) = check_source(text + " checkpoint", "nb.ipynb")
        assert finding.rule == SYNTAX_ERROR and "not a notebook" in finding.message


def test_cli_reports_cell_and_line(tmp_path: Path) -> None:
    path = tmp_path / "train.ipynb"
    path.write_text(NOTEBOOK, encoding="utf-8")
    run = [sys.executable, "-m", "rootrank.cli", "check"]
    text = subprocess.run([*run, str(tmp_path)], capture_output=True, text=True, check=False)
    assert text.returncode == 1
    assert text.stdout.startswith(f"{path}:cell 4:4:12: checkpoint.use-reentrant-explicit [*] ")
    data = json.loads(subprocess.run([*run, "--format", "json", str(path)], capture_output=True, text=True,
                                     check=False).stdout)
    assert [(f["cell"], f["line"]) for f in data["findings"]] == [(4, 4)]


def test_a_cell_that_does_not_parse_is_reported_and_the_others_still_checked() -> None:
    notebook = _notebook(
        ("code", "from torch.utils.checkpoint import checkpoint"),
        ("code", "inputs = f(\n    a\n    b=1,\n)"),  # a missing comma, as saved in a real notebook
        ("code", "!curl -X POST http://localhost:8000 \\\n  -H 'Content-Type: application/json' \\\n  -d '{}'"),
        ("code", "y = checkpoint(block, x)"),
    )
    findings = check_source(notebook, "nb.ipynb")
    assert [(f.rule, f.cell) for f in findings] == [(SYNTAX_ERROR, 2), ("checkpoint.use-reentrant-explicit", 4)]
