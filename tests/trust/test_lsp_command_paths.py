"""Issue #22, item 21: the server's commands read from disk only open documents and files under the workspace
folders (symlinks resolved before the check), whatever path their arguments name."""

from __future__ import annotations

import os
from pathlib import Path

from tests.trust.conftest import REPO, ROOT_CAUSE_LOG, RawLsp

OUTSIDE_MESSAGE = "is neither an open document nor a file under a workspace folder"


def _diagnose(server: RawLsp, *arguments: object) -> dict:
    return server.request("workspace/executeCommand", {"command": "rootrank.diagnose", "arguments": list(arguments)},
                          timeout=60)


def test_the_diagnose_command_reads_only_workspace_files(raw_lsp, tmp_path: Path) -> None:
    workspace, outside = tmp_path / "ws", tmp_path / "elsewhere"
    (workspace / "logs").mkdir(parents=True)
    outside.mkdir()
    log = ROOT_CAUSE_LOG.read_text(encoding="utf-8")
    (workspace / "logs" / "run.log").write_text(log)
    secret = outside / "secret.log"
    secret.write_text(log)  # diagnosable: a read would show as a root cause
    (workspace / "link-out.log").symlink_to(secret)
    (workspace / "dir-link").symlink_to(outside, target_is_directory=True)
    (outside / "link-in.log").symlink_to(workspace / "logs" / "run.log")
    server = raw_lsp()
    server.initialize(workspace)

    inside = [workspace / "logs" / "run.log", workspace / "logs" / ".." / "logs" / "run.log", outside / "link-in.log"]
    for path in inside:
        for arguments in (["", path.as_uri()], [{"text": "", "uri": path.as_uri()}], ["", str(path)]):
            reply = _diagnose(server, *arguments)
            assert reply.get("result", {}).get("root_cause", {}).get("rank") == 2, (arguments, reply)

    refused = [secret, workspace / "link-out.log", workspace / "dir-link" / "secret.log",
               workspace / ".." / "elsewhere" / "secret.log", Path("/etc/passwd"), Path("/proc/self/environ"),
               Path("/etc/shadow")]
    for path in refused:
        for arguments in (["", path.as_uri()], ["", str(path)], ["", os.path.relpath(path, REPO)]):  # the server runs in REPO
            reply = _diagnose(server, *arguments)
            error = reply.get("error", {})
            assert error.get("code") == -32602 and OUTSIDE_MESSAGE in error.get("message", ""), (arguments, reply)
            assert "result" not in reply

    # An open document is the client's to give, wherever it lives: its text is used, never the file.
    opened = tmp_path / "elsewhere" / "open.log"
    server.open(opened.as_uri(), log)
    assert _diagnose(server, "", opened.as_uri())["result"]["root_cause"]["rank"] == 2
    # Text passed in is diagnosed with the path only as its name.
    assert _diagnose(server, log, secret.as_uri())["result"]["root_cause"]["rank"] == 2
    assert server.shutdown() == 0


def test_no_workspace_folder_means_no_file_is_read(raw_lsp, tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_text(ROOT_CAUSE_LOG.read_text(encoding="utf-8"))
    server = raw_lsp()
    reply = server.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
    assert "result" in reply, reply
    server.notify("initialized", {})
    error = _diagnose(server, "", log.as_uri()).get("error", {})
    assert error.get("code") == -32602 and OUTSIDE_MESSAGE in error.get("message", ""), error
    assert server.shutdown() == 0


def test_the_measure_command_takes_paths_only_under_the_workspace(raw_lsp, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "out").symlink_to(tmp_path, target_is_directory=True)
    server = raw_lsp()
    server.initialize(workspace)
    for options in ({"hfConfig": "/etc/passwd"}, {"hfConfig": "../../../../../../etc/passwd"},
                    {"hfConfig": "out/config.json"}, {"hfConfig": "config.json", "cwd": "/etc"},
                    {"target": "pkg.mod:build", "cwd": str(tmp_path)}):
        reply = server.request("workspace/executeCommand", {"command": "rootrank.measure", "arguments": [options]})
        error = reply.get("error", {})
        assert error.get("code") == -32602 and "is not under a workspace folder" in error.get("message", ""), \
            (options, reply)
    assert server.shutdown() == 0
