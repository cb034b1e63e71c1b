"""rootrank never touches the network: every front end runs under an audit hook that records socket use.

The hook (conftest.SITECUSTOMIZE) is installed in the child through a `sitecustomize.py` on PYTHONPATH and
appends every socket / subprocess / os.system audit event to a file this test reads. asyncio's AF_UNIX
self-pipe is not recorded.
"""

from __future__ import annotations

from pathlib import Path

from tests.trust.conftest import ROOT_CAUSE_LOG, assert_well_behaved, run_cli

NETWORK_EVENTS = ("socket.connect", "socket.bind", "socket.getaddrinfo", "socket.gethostbyname",
                  "socket.gethostbyaddr", "socket.getnameinfo", "socket.sendto", "socket.sendmsg",
                  "socket.__new__", "urllib.Request", "http.client.connect")

CODE = """import torch
from torch.utils.checkpoint import checkpoint


def forward(block, x):
    return checkpoint(block, x)
"""


def network(events: list[str]) -> list[str]:
    return [e for e in events if e.split("\t")[0] in NETWORK_EVENTS]


def test_the_hook_itself_sees_a_connect(audit, tmp_path: Path) -> None:
    """Guard against a silent hook: a child that does connect is caught."""
    import subprocess
    import sys

    env, events = audit
    subprocess.run([sys.executable, "-c", "import socket\ntry:\n socket.create_connection(('127.0.0.1', 9), 0.2)\n"
                    "except OSError: pass"], env=env, check=True, timeout=30)
    assert any(e.startswith("socket.connect") for e in events()), events()


def test_cli_commands_open_no_socket(audit, tmp_path: Path) -> None:
    env, events = audit
    code = tmp_path / "train.py"
    code.write_text(CODE)
    runs = {
        "diagnose": run_cli(["diagnose", "--format", "json", str(ROOT_CAUSE_LOG)], env=env),
        "diagnose-md": run_cli(["diagnose", "--format", "markdown", str(ROOT_CAUSE_LOG)], env=env),
        "diagnose-stdin": run_cli(["diagnose", "-"], stdin=ROOT_CAUSE_LOG, env=env),
        "check": run_cli(["check", str(code)], env=env),
        "check-sarif": run_cli(["check", "--format", "sarif", str(code)], env=env),
        "explain": run_cli(["explain", "memory.cuda-oom"], env=env),
        "rules": run_cli(["rules", "--format", "json"], env=env),
    }
    assert runs["diagnose"].returncode == 1
    assert_well_behaved(runs["diagnose"])
    assert runs["check"].returncode == 1, runs["check"].stdout + runs["check"].stderr
    for name in ("explain", "rules", "diagnose-md", "diagnose-stdin", "check-sarif"):
        assert runs[name].returncode in (0, 1), (name, runs[name].stderr)
    recorded = events()
    assert not network(recorded), recorded
    assert not [e for e in recorded if not e.startswith("socket.")], recorded  # no programs run either


def test_language_server_opens_no_socket(audit, raw_lsp, tmp_path: Path) -> None:
    env, events = audit
    server = raw_lsp(env)
    server.initialize(tmp_path)
    log_uri = (tmp_path / "job.log").as_uri()
    code_uri = (tmp_path / "train.py").as_uri()
    text = ROOT_CAUSE_LOG.read_text(encoding="utf-8")
    server.open(log_uri, text, "log")
    server.open(code_uri, CODE, "python")
    server.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                and m["params"]["uri"] == code_uri and m["params"]["diagnostics"], what="code diagnostics")
    line = next(i for i, line in enumerate(CODE.splitlines()) if "checkpoint(block" in line)
    hover = server.request("textDocument/hover", {"textDocument": {"uri": code_uri},
                                                  "position": {"line": line, "character": 12}})
    assert "error" not in hover, hover
    command = server.request("workspace/executeCommand", {"command": "rootrank.diagnose", "arguments": [text]},
                             timeout=60)
    assert "error" not in command, command
    assert command["result"]["root_cause"]["rank"] == 2
    assert server.shutdown() == 0
    recorded = events()
    assert not network(recorded), recorded
