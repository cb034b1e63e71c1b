"""`rootrank.measure` (workspace/executeCommand): the measurement in a subprocess of the workspace's
interpreter, with $/progress, and the hover on a checkpoint call showing the measured numbers."""

from __future__ import annotations

import sys

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from tests.heavy import require_installed
from tests.lsp.lsp_helpers import open_document

MODEL = '''import torch
from torch import nn
from torch.utils.checkpoint import checkpoint


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(32, 128), nn.GELU(), nn.Linear(128, 32))

    def forward(self, x):
        return x + self.body(x)


class Stack(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(Block() for _ in range(4))

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = checkpoint(layer, x, use_reentrant=False) if i < 2 else layer(x)
        return x.square().mean()


def build():
    torch.manual_seed(0)
    return Stack(), torch.randn(64, 32, requires_grad=True)
'''
CALL_LINE = 21  # 0-based line of the checkpoint() call above


async def test_measure_command_and_hover(vscode: LanguageClient) -> None:
    require_installed("torch")
    root = vscode.root  # type: ignore[attr-defined]
    (root / "model.py").write_text(MODEL)
    result = await vscode.workspace_execute_command_async(types.ExecuteCommandParams(
        "rootrank.measure", [{"target": "model:build", "python": sys.executable}]))
    assert result["schema"] == "rootrank.measure/1"
    assert [b["configured"] for b in result["blocks"]] == ["checkpointed"] * 2 + ["no"] * 2
    assert {f["id"] for f in result["findings"]} == {"checkpoint.partial-coverage"}
    assert "# Checkpointing measurement" in result["markdown"]
    reports = [r for values in vscode.progress_reports.values() for r in values]
    assert any(isinstance(r, types.WorkDoneProgressReport) and r.message and "layers" in r.message for r in reports)

    uri = open_document(vscode, "model.py", MODEL)
    hover = await vscode.text_document_hover_async(types.HoverParams(
        types.TextDocumentIdentifier(uri), types.Position(CALL_LINE, 30)))
    assert hover is not None
    text = hover.contents.value  # type: ignore[union-attr]
    assert "Last measurement" in text and "layers.0-1" in text and "engaged" in text


async def test_measure_command_errors(vscode: LanguageClient) -> None:
    with pytest.raises(JsonRpcException, match="either target"):
        await vscode.workspace_execute_command_async(types.ExecuteCommandParams("rootrank.measure", [{}]))
    require_installed("torch")
    with pytest.raises(JsonRpcException, match="no module named 'nosuch'"):
        await vscode.workspace_execute_command_async(types.ExecuteCommandParams(
            "rootrank.measure", [{"target": "nosuch:build", "python": sys.executable}]))
