"""The server stays up: crashing rules, malformed requests, unknown documents; and exits with its client."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import uuid
from concurrent.futures import Future
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.lsp.conftest import PATCHED_SERVER, SERVER, initialize_params, make_client, make_workspace
from tests.lsp.lsp_helpers import diagnostics_for, open_document, wait_for

HERE = Path(__file__).resolve().parent
RULE = "checkpoint.use-reentrant-explicit"
TRAIN = "from torch.utils.checkpoint import checkpoint\n\ny = checkpoint(block, x)\n"


async def _start(lsp_client: LanguageClient, tmp_path: Path):
    lsp_client.root = make_workspace(tmp_path)  # type: ignore[attr-defined]
    await lsp_client.initialize_session(initialize_params("visual-studio-code", lsp_client.root))  # type: ignore[attr-defined]


@pytest_lsp.fixture(config=ClientServerConfig(
    server_command=PATCHED_SERVER, client_factory=make_client,
    server_env={**os.environ, "ROOTRANK_TEST_CRASH_RULE": "1"}))
async def crashing(lsp_client: LanguageClient, tmp_path: Path):
    await _start(lsp_client, tmp_path)
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=ClientServerConfig(
    server_command=PATCHED_SERVER, client_factory=make_client,
    server_env={**os.environ, "ROOTRANK_TEST_CRASH_RULE": "1", "ROOTRANK_TEST_ENGINE_CRASH": "1"}))
async def engine_crashing(lsp_client: LanguageClient, tmp_path: Path):
    await _start(lsp_client, tmp_path)
    yield
    await lsp_client.shutdown_session()


async def _still_serving(client: LanguageClient, name: str = "again.py") -> None:
    uri = open_document(client, name, TRAIN)
    assert [d for d in await diagnostics_for(client, uri, version=1, min_count=1) if d.code == RULE]
    hover = await client.text_document_hover_async(types.HoverParams(
        types.TextDocumentIdentifier(uri), types.Position(2, 6)))
    assert hover is not None


async def test_a_crashing_rule_is_isolated(crashing: LanguageClient):
    await _isolated(crashing)


async def test_a_crashing_check_run_falls_back_to_one_rule_at_a_time(engine_crashing: LanguageClient):
    await _isolated(engine_crashing)
    assert any("re-running each rule alone" in m.message for m in engine_crashing.log_messages)


async def _isolated(client: LanguageClient) -> None:
    uri = open_document(client, "train.py", TRAIN)
    diagnostics = await diagnostics_for(client, uri, version=1, min_count=1)
    assert [d.code for d in diagnostics] == [RULE], "the other rules still report"
    message = await wait_for(lambda: next((m for m in client.log_messages
                                           if "checkpoint.test-always-raises" in m.message), None),
                             what="the crash in the client's log")
    assert "boom: a broken rule" in message.message and message.type == types.MessageType.Error
    await _still_serving(client)
    # Reported once, not on every check.
    await _still_serving(client, "third.py")
    assert sum("boom: a broken rule" in m.message for m in client.log_messages) == 1


async def test_malformed_requests_and_unknown_documents(vscode: LanguageClient):
    client = vscode
    unknown = (client.root / "never-opened.py").as_uri()  # type: ignore[attr-defined]
    # Params that do not parse: an error response, not silence.
    with pytest.raises(JsonRpcException):
        await _raw_request(client, types.TEXT_DOCUMENT_HOVER, {"textDocument": {"uri": 3}})
    with pytest.raises(JsonRpcException):
        await _raw_request(client, types.TEXT_DOCUMENT_CODE_ACTION, [1, 2, 3])
    with pytest.raises(JsonRpcException):
        await _raw_request(client, "rootrank/noSuchMethod", {})
    with pytest.raises(JsonRpcException):
        await client.workspace_execute_command_async(types.ExecuteCommandParams("rootrank.noSuchCommand", []))
    # Requests and notifications about documents the server has never seen.
    assert await client.text_document_hover_async(types.HoverParams(
        types.TextDocumentIdentifier(unknown), types.Position(0, 0))) is None
    assert not await client.text_document_code_action_async(types.CodeActionParams(
        types.TextDocumentIdentifier(unknown), types.Range(types.Position(0, 0), types.Position(0, 1)),
        types.CodeActionContext(diagnostics=[])))
    client.text_document_did_save(types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(unknown)))
    client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(unknown)))
    client.protocol._send_data({"jsonrpc": "2.0", "method": types.TEXT_DOCUMENT_DID_OPEN,
                                "params": {"textDocument": {"uri": unknown}}})  # fields missing
    client.protocol._send_data({"jsonrpc": "2.0", "method": types.TEXT_DOCUMENT_DID_CHANGE,
                                "params": {"textDocument": {"uri": unknown, "version": 2},
                                           "contentChanges": [{"text": "x"}]}})  # never opened
    # Out-of-range positions on an open document.
    uri = open_document(client, "train.py", TRAIN)
    await diagnostics_for(client, uri, version=1, min_count=1)
    assert await client.text_document_hover_async(types.HoverParams(
        types.TextDocumentIdentifier(uri), types.Position(999, 999))) is None
    # Bad settings are reported, not fatal.
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"rootrank": {"severity": {"checkpoint": "loud"}, "lintOn": 3, "nonsense": True}}))
    await wait_for(lambda: any("lintOn" in m.message for m in client.log_messages), what="a settings warning")
    await _still_serving(client)


async def _raw_request(client: LanguageClient, method: str, params: object) -> object:
    """A request written as raw JSON, bypassing the client's typed serialisation."""
    msg_id = str(uuid.uuid4())
    future: Future = Future()
    client.protocol._request_futures[msg_id] = future
    client.protocol._send_data({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
    return await asyncio.wait_for(asyncio.wrap_future(future), timeout=20)


def _frame(payload: dict) -> bytes:
    body = json.dumps(payload).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _read_message(stream) -> dict:
    length = 0
    while line := stream.readline().strip():
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return json.loads(stream.read(length))


def _initialize(process: subprocess.Popen, process_id: int | None) -> None:
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(_frame({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                "params": {"processId": process_id, "rootUri": None, "capabilities": {}}}))
    process.stdin.flush()
    assert _read_message(process.stdout)["id"] == 1


def _close_pipes(process: subprocess.Popen[bytes]) -> None:
    for stream in (process.stdin, process.stdout):
        if stream is not None:
            stream.close()


def test_exits_when_the_client_closes_the_pipe():
    process = subprocess.Popen(SERVER, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        _initialize(process, os.getpid())
        process.stdin.close()  # type: ignore[union-attr]
        assert process.wait(timeout=20) is not None
    finally:
        process.kill()
        _close_pipes(process)


def test_exits_when_the_client_process_dies():
    parent = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.5)"])
    process = subprocess.Popen(SERVER, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        _initialize(process, parent.pid)
        parent.wait()
        start = time.monotonic()
        process.wait(timeout=20)  # the stdin pipe is still open: only the parent watch can end it
        assert time.monotonic() - start < 20
    finally:
        process.kill()
        _close_pipes(process)
