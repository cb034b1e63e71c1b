"""`rootrank.diagnose` (workspace/executeCommand): the CLI's JSON plus Markdown, for logs and terminal pastes."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from tests.lsp.lsp_helpers import open_document

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "logs"
LOGS = sorted(p for p in FIXTURES.glob("*/log.txt")) if FIXTURES.is_dir() else []
RUN = FIXTURES / "process.uncaught-exception--rank2-valueerror-step3-no-record"


def _expected_rank(log: Path) -> int | None:
    return yaml.safe_load((log.parent / "expect.yaml").read_text()).get("initiating_rank")


async def _diagnose(client: LanguageClient, *arguments: object) -> dict:
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams("rootrank.diagnose", list(arguments)))
    assert isinstance(result, dict)
    return result


def _terminal_paste(text: str, width: int = 100) -> str:
    """What a selection in a terminal gives: a prompt, hard-wrapped lines, the start cut off."""
    wrapped: list[str] = []
    for line in text.splitlines():
        while len(line) > width:
            wrapped.append(line[:width])
            line = line[width:]
        wrapped.append(line)
    return "(venv) me@gpu-node:~/run$ torchrun --nproc-per-node 4 train.py\n" + "\n".join(wrapped[3:]) + \
        "\n(venv) me@gpu-node:~/run$ "


@pytest.mark.skipif(not LOGS, reason="no fixture logs in this checkout")
async def test_diagnose_names_the_initiating_rank(client: LanguageClient):
    log = RUN / "log.txt"
    result = await _diagnose(client, log.read_text(encoding="utf-8"))
    assert result["schema"] == "rootrank.diagnosis/2"
    assert result["root_cause"]["rank"] == _expected_rank(log) == 2
    assert "# " in result["markdown"] or "**" in result["markdown"]


@pytest.mark.skipif(not LOGS, reason="no fixture logs in this checkout")
async def test_same_json_as_the_cli(vscode: LanguageClient):
    # A spread of the fixture logs (each costs a CLI process); the rank each one names is the engine's business.
    for log in LOGS[:: max(1, len(LOGS) // 6)]:
        text = log.read_text(encoding="utf-8")
        result = await _diagnose(vscode, text)
        markdown = result.pop("markdown")
        cli = subprocess.run([sys.executable, "-m", "rootrank", "diagnose", "--format", "json", "-"], input=text,
                             capture_output=True, text=True, encoding="utf-8", check=False)
        assert cli.stdout, cli.stderr
        assert result == json.loads(cli.stdout), log.parent.name
        assert markdown.strip()


@pytest.mark.skipif(not LOGS, reason="no fixture logs in this checkout")
async def test_terminal_selection(vscode: LanguageClient):
    result = await _diagnose(vscode, _terminal_paste((RUN / "log.txt").read_text(encoding="utf-8")))
    assert result["root_cause"]["rank"] == 2


@pytest.mark.skipif(not LOGS, reason="no fixture logs in this checkout")
async def test_source_uri_and_object_form(vscode: LanguageClient):
    text = (RUN / "log.txt").read_text(encoding="utf-8")
    uri = open_document(vscode, "run.log", text, language_id="log")
    by_uri = await _diagnose(vscode, "", uri)  # empty text + URI: the open document
    by_object = await _diagnose(vscode, {"text": text, "uri": uri})
    assert by_uri["root_cause"]["rank"] == by_object["root_cause"]["rank"] == 2
    assert by_uri["root_cause"]["source"].endswith("run.log")


@pytest.mark.parametrize("arguments", [[], [42], ["a", "b", "c"], [None, None], [{"text": 1}]])
async def test_bad_arguments_are_an_error_not_a_crash(vscode: LanguageClient, arguments: list):
    with pytest.raises(JsonRpcException):
        await vscode.workspace_execute_command_async(types.ExecuteCommandParams("rootrank.diagnose", arguments))
    assert (await _diagnose(vscode, "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB"))["schema"]


@pytest.mark.skipif(not LOGS, reason="no fixture logs in this checkout")
async def test_cancelled_request(slow_logs: LanguageClient):
    text = (RUN / "log.txt").read_text(encoding="utf-8") * 20  # the slow engine needs seconds for this
    request = asyncio.ensure_future(slow_logs.protocol.send_request_async(
        types.WORKSPACE_EXECUTE_COMMAND, types.ExecuteCommandParams("rootrank.diagnose", [text]), msg_id="slow-1"))
    await asyncio.sleep(0.3)
    slow_logs.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="slow-1"))
    with pytest.raises(JsonRpcException):
        await asyncio.wait_for(request, timeout=5)  # answered at once, not when the diagnosis would end
    assert (await _diagnose(slow_logs, "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB"))["schema"]
