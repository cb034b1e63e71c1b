"""pytest-lsp fixtures: the real server (`python -m rootrank.lsp`) over stdio, driven by a recording client.

`client` is parametrized with the capabilities recorded from VS Code and Neovim; `vscode` is a single
VS Code-like client for the robustness tests. Each test gets a fresh workspace whose `.venv` holds torch and
transformers dist-infos (torch is never installed; the server only reads package metadata).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.protocol import default_converter
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

HERE = Path(__file__).resolve().parent
SERVER = [sys.executable, "-m", "rootrank.lsp"]
PATCHED_SERVER = [sys.executable, str(HERE / "patched_server.py")]  # test-only faults, see that file
CLIENTS = ["visual-studio-code", "neovim"]
TORCH_VERSION = "2.3.1"
TRANSFORMERS_VERSION = "4.57.6"  # the checks' Hugging Face facts depend on it (transformers >= 5 runs non-reentrant)


def make_client() -> LanguageClient:
    """pytest-lsp's client, also keeping every publishDiagnostics (not just the latest per document)."""
    client = LanguageClient(converter_factory=default_converter)
    client.published = []  # type: ignore[attr-defined]

    def publish(c: LanguageClient, params: types.PublishDiagnosticsParams) -> None:
        c.diagnostics[params.uri] = params.diagnostics
        c.published.append(params)  # type: ignore[attr-defined]

    features = dict(DEFAULT_CLIENT_FEATURES)
    features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = publish
    register_lsp_features(client, features)
    return client


def make_workspace(root: Path) -> Path:
    site = root / ".venv" / "lib" / "python3.11" / "site-packages"
    info = site / f"torch-{TORCH_VERSION}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: torch\nVersion: {TORCH_VERSION}\n")
    info = site / f"transformers-{TRANSFORMERS_VERSION}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: transformers\nVersion: {TRANSFORMERS_VERSION}\n")
    return root


def initialize_params(spec: str, root: Path, options: dict[str, Any] | None = None) -> types.InitializeParams:
    return types.InitializeParams(
        capabilities=client_capabilities(spec),
        root_uri=root.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name=root.name)],
        initialization_options=options or {},
    )


@pytest_lsp.fixture(params=CLIENTS, config=ClientServerConfig(server_command=SERVER, client_factory=make_client))
async def client(request: pytest.FixtureRequest, lsp_client: LanguageClient, tmp_path: Path):
    root = make_workspace(tmp_path)
    lsp_client.root = root  # type: ignore[attr-defined]
    result = await lsp_client.initialize_session(initialize_params(request.param, root))
    lsp_client.encoding = str(getattr(result.capabilities.position_encoding, "value",  # type: ignore[attr-defined]
                                      result.capabilities.position_encoding) or "utf-16")
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER, client_factory=make_client))
async def vscode(lsp_client: LanguageClient, tmp_path: Path):
    root = make_workspace(tmp_path)
    lsp_client.root = root  # type: ignore[attr-defined]
    await lsp_client.initialize_session(initialize_params("visual-studio-code", root))
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=ClientServerConfig(
    server_command=PATCHED_SERVER, client_factory=make_client,
    server_env={**os.environ, "ROOTRANK_TEST_SLOW_LOGS": "1"}))
async def slow_logs(lsp_client: LanguageClient, tmp_path: Path):
    """A VS Code-like client on a server whose log engine reads slowly (to edit or cancel mid-diagnosis)."""
    root = make_workspace(tmp_path)
    lsp_client.root = root  # type: ignore[attr-defined]
    await lsp_client.initialize_session(initialize_params("visual-studio-code", root, {"progressLines": 500}))
    yield
    await lsp_client.shutdown_session()
