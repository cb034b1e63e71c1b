"""The language server under faults, spoken to in raw JSON-RPC over stdio (what tests/lsp does not cover:
broken framing and JSON, bursts of edits to a log without a slowed engine, hostile documents, a client that
vanishes while a diagnosis is running or stops reading, Ctrl-C)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.trust.conftest import FIXTURE_LOGS, REPO, ROOT_CAUSE_LOG, RawLsp, cli_env

SIGKILL_LOG = FIXTURE_LOGS / "process.killed-signal--rank1-sigkill-step4-plain" / "log.txt"
PATCHED_SERVER = REPO / "tests" / "lsp" / "patched_server.py"
TRAIN = "from torch.utils.checkpoint import checkpoint\n\ny = checkpoint(block, x)\n"


def _still_serving(server: RawLsp, root: Path, name: str) -> None:
    uri = (root / name).as_uri()
    server.open(uri, TRAIN, "python")
    server.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri
                and m["params"]["diagnostics"], what=f"diagnostics for {name}")
    reply = server.request("workspace/executeCommand", {"command": "rootrank.diagnose",
                                                        "arguments": [ROOT_CAUSE_LOG.read_text()]}, timeout=60)
    assert reply.get("result", {}).get("root_cause", {}).get("rank") == 2, reply
    assert server.proc.poll() is None


def test_broken_framing_and_json(raw_lsp, tmp_path: Path) -> None:
    server = raw_lsp()
    server.initialize(tmp_path)
    for body in (b"{not json", b"[1, 2, 3]", b"42", b"null", b'"a string"', b"{}",
                 b'{"jsonrpc": "2.0"}', b'{"jsonrpc": "2.0", "id": 99}',
                 b'{"jsonrpc": "1.0", "id": 100, "method": "textDocument/hover"}',
                 b'{"jsonrpc": "2.0", "id": 101, "method": 7, "params": {}}',
                 b'{"jsonrpc": "2.0", "id": {"nested": []}, "method": "shutdown2"}',
                 b'{"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": null}',
                 b'{"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {"textDocument": 5}}',
                 '{"jsonrpc": "2.0", "id": 102, "method": "\u00fc\U0001d518", "params": {}}'.encode(),
                 b'\xff\xfe\x00garbage', b'{"jsonrpc": "2.0", "id": 103, "method": "$/cancelRequest", '
                 b'"params": {"id": 424242}}'):
        server.send_raw(body)
    # A request with a params object far bigger than any editor sends.
    server.send_raw(json.dumps({"jsonrpc": "2.0", "id": 104, "method": "textDocument/hover",
                                "params": {"textDocument": {"uri": "file:///x.py"}, "position": {
                                    "line": 0, "character": 0}, "junk": ["x" * 1000] * 2000}}).encode())
    # Headers that are not Content-Length, and a header line of junk, before a valid message.
    assert server.proc.stdin is not None
    server.proc.stdin.write(b"X-Junk: yes\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n")
    body = json.dumps({"jsonrpc": "2.0", "id": 105, "method": "textDocument/hover", "params": {
        "textDocument": {"uri": "file:///never.py"}, "position": {"line": 0, "character": 0}}}).encode()
    server.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    server.proc.stdin.flush()
    assert "error" not in server.response(105), "a valid request after junk is answered"
    _still_serving(server, tmp_path, "after-junk.py")
    assert server.shutdown() == 0


def test_unknown_documents_for_the_diagnose_command(raw_lsp, tmp_path: Path) -> None:
    server = raw_lsp()
    server.initialize(tmp_path)
    never = (tmp_path / "never-opened.log").as_uri()
    for arguments in (["", never], [{"text": "", "uri": never}], ["", "file:///proc/self/mem"],
                      ["", str(tmp_path)], [None, None], ["", "file:///etc/shadow-does-not-exist"]):
        reply = server.request("workspace/executeCommand", {"command": "rootrank.diagnose", "arguments": arguments},
                               timeout=30)
        assert "error" in reply or "result" in reply, reply
    for method, params in (
        ("textDocument/hover", {"textDocument": {"uri": never}, "position": {"line": 3, "character": 1}}),
        ("textDocument/codeAction", {"textDocument": {"uri": never}, "range": {
            "start": {"line": 0, "character": 0}, "end": {"line": 99, "character": 0}},
            "context": {"diagnostics": []}}),
    ):
        reply = server.request(method, params)
        assert "error" not in reply and not reply.get("result"), reply
    _still_serving(server, tmp_path, "after-unknown.py")
    assert server.shutdown() == 0


def test_burst_of_edits_publishes_only_the_final_text(raw_lsp, tmp_path: Path) -> None:
    """Twenty quick edits alternating two logs: whatever was published last is the diagnosis of the final text,
    and no publication carries a version older than one already published."""
    server = raw_lsp()
    server.initialize(tmp_path)
    texts = [ROOT_CAUSE_LOG.read_text(encoding="utf-8"), SIGKILL_LOG.read_text(encoding="utf-8")]
    uri = (tmp_path / "live.log").as_uri()
    server.open(uri, texts[0], "log")
    for version in range(2, 22):
        server.change(uri, version, texts[version % 2])
        time.sleep(0.01 if version % 5 else 0.2)  # now and then long enough for a diagnosis to start
    final_version = 21
    final = server.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                        and m["params"]["uri"] == uri and m["params"].get("version") == final_version,
                        timeout=30, what="diagnostics of the final version")
    time.sleep(1.0)
    published = server.published(uri)
    versions = [p.get("version") for p in published]
    assert versions[-1] == final_version, versions
    assert versions == sorted(versions), f"an older result was published after a newer one: {versions}"
    messages = [d["message"] for d in final["params"]["diagnostics"]]
    assert any(m.startswith("initiating failure: rank 1,") for m in messages), messages  # the SIGKILL log
    hover_line = next(d["range"]["start"]["line"] for d in final["params"]["diagnostics"]
                      if d["message"].startswith("initiating failure"))
    hover = server.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                  "position": {"line": hover_line, "character": 0}})
    assert hover.get("result"), hover
    assert server.shutdown() == 0


def test_hostile_documents(raw_lsp, tmp_path: Path) -> None:
    """Junk logs and code that overflow parsers are diagnosed (or refused) without taking the server down."""
    server = raw_lsp()
    server.initialize(tmp_path)
    documents = {
        "junk.log": ("log", bytes(range(256)).decode("latin-1") * 2000),
        "nul.log": ("log", "\x00" * 100_000),
        "cr.log": ("log", "\r" * 100_000 + ROOT_CAUSE_LOG.read_text().replace("\n", "\r")),
        "long-line.log": ("log", "x" * 3_000_000),
        "surrogates.log": ("log", "[rank0]: \ud800\udfff 𝔘 RuntimeError: é\n" * 1000),
        "deep.py": ("python", "from torch.utils.checkpoint import checkpoint\nx = " + "(" * 5000 + ")" * 5000),
        "deep-binop.py": ("python", "from torch.utils.checkpoint import checkpoint\nx = "
                          + "+".join(["a"] * 50_000)),
        "nul.py": ("python", "from torch.utils.checkpoint import checkpoint\n\x00\n"),
        "config.yaml": ("yaml", "gradient_checkpointing: " + "[" * 5000),
    }
    uris = {}
    for name, (language, text) in documents.items():
        uris[name] = (tmp_path / name).as_uri()
        server.open(uris[name], text, language)
    for name in ("junk.log", "cr.log", "deep.py", "nul.py"):
        server.wait(lambda m, u=uris[name]: m.get("method") == "textDocument/publishDiagnostics"
                    and m["params"]["uri"] == u, timeout=60, what=f"diagnostics for {name}")
    cr = [p for p in server.published(uris["cr.log"]) if p["diagnostics"]]
    assert cr and any(d["message"].startswith("initiating failure: rank 2,") for d in cr[-1]["diagnostics"])
    for name, uri in uris.items():
        reply = server.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                      "position": {"line": 0, "character": 5}})
        assert "error" not in reply, (name, reply)
    _still_serving(server, tmp_path, "after-hostile.py")
    assert server.shutdown() == 0
    assert "Traceback" not in server.stderr, server.stderr[-3000:]


DEEP_BUT_VALID = ("from torch.utils.checkpoint import checkpoint\n\n\ndef forward(f, x):\n"
                  "    return checkpoint(f, " + "+".join(["x"] * 900) + ")\n")


def test_hover_on_a_deep_but_valid_file(raw_lsp, tmp_path: Path) -> None:
    """Regression: the hover's tree walk once overflowed the stack on a ~900-deep expression (RecursionError)."""
    compile(DEEP_BUT_VALID, "deep.py", "exec")  # Python itself accepts it
    server = raw_lsp()
    server.initialize(tmp_path)
    uri = (tmp_path / "deep.py").as_uri()
    server.open(uri, DEEP_BUT_VALID, "python")
    published = server.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                            and m["params"]["uri"] == uri, timeout=30, what="diagnostics for deep.py")
    assert published["params"]["diagnostics"], "the missing use_reentrant is still found"
    reply = server.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                  "position": {"line": 4, "character": 12}})
    assert "error" not in reply, reply["error"]["message"]


def test_client_vanishes_while_a_diagnosis_runs(raw_lsp, tmp_path: Path) -> None:
    """stdin closed in the middle of a (slowed) log diagnosis: the process exits within seconds, not spinning."""
    import sys

    server = raw_lsp(cli_env(ROOTRANK_TEST_SLOW_LOGS="1"), command=[sys.executable, str(PATCHED_SERVER)])
    server.initialize(tmp_path)
    uri = (tmp_path / "big.log").as_uri()
    noise = "".join(f"[rank{i % 4}]:step {i} lr 3e-4 grad_norm 1.21\n" for i in range(3000))
    server.open(uri, noise + ROOT_CAUSE_LOG.read_text(), "log")
    time.sleep(0.8)  # the slowed engine needs seconds for this log: it is running now
    assert server.proc.poll() is None
    assert not [p for p in server.published(uri) if p["diagnostics"]], "the diagnosis finished too soon"
    start = time.monotonic()
    assert server.proc.stdin is not None
    server.proc.stdin.close()
    server.proc.wait(timeout=10)
    assert time.monotonic() - start < 5, f"exited after {time.monotonic() - start:.1f}s"


def test_diagnose_command_on_a_fifo_does_not_freeze_the_server(raw_lsp, tmp_path: Path) -> None:
    """Regression: the command once opened its source URI on the event loop, so a FIFO froze the server."""
    server = raw_lsp()
    server.initialize(tmp_path)
    fifo = tmp_path / "pipe.log"
    os.mkfifo(fifo)
    server.request_async("workspace/executeCommand", {"command": "rootrank.diagnose",
                                                      "arguments": ["", fifo.as_uri()]})
    time.sleep(0.3)
    hover = server.request("textDocument/hover", {"textDocument": {"uri": (tmp_path / "x.py").as_uri()},
                                                  "position": {"line": 0, "character": 0}}, timeout=2)
    assert "error" not in hover


def test_diagnose_command_on_a_device_is_bounded(raw_lsp, tmp_path: Path) -> None:
    """Regression: /dev/zero (size 0) passed the size cap and was read without bound. Run under a 1.5 GiB
    address-space cap so that a regression fails instead of eating the machine."""
    server = raw_lsp(memory_limit=1536 << 20)
    server.initialize(tmp_path)
    reply = server.request("workspace/executeCommand", {"command": "rootrank.diagnose",
                                                        "arguments": ["", "file:///dev/zero"]}, timeout=20)
    assert "error" in reply
    assert "MemoryError" not in json.dumps(reply), reply
    _still_serving(server, tmp_path, "after-dev-zero.py")


def test_client_vanishes_mid_message(raw_lsp, tmp_path: Path) -> None:
    """The pipe closes half-way through a frame (a crashed editor): the server exits instead of waiting."""
    server = raw_lsp()
    server.initialize(tmp_path)
    assert server.proc.stdin is not None
    server.proc.stdin.write(b"Content-Length: 5000\r\n\r\n{\"jsonrpc\": \"2.0\", \"method\": \"textDocu")
    server.proc.stdin.flush()
    time.sleep(0.2)
    start = time.monotonic()
    server.proc.stdin.close()
    server.proc.wait(timeout=10)
    assert time.monotonic() - start < 5


def test_no_pid_watch_needed_when_exit_arrives_without_shutdown(raw_lsp, tmp_path: Path) -> None:
    """`exit` without `shutdown` ends the process with status 1 (LSP spec), promptly."""
    server = raw_lsp()
    server.initialize(tmp_path)
    server.notify("exit", None)
    assert server.proc.wait(timeout=10) == 1
    assert os.path.exists(tmp_path)


def test_a_library_that_fails_to_load(raw_lsp, tmp_path: Path) -> None:
    """A failure entry that crashes the loader (see test_hostile_entries) is a fault inside every diagnosis:
    the server reports it in the client's log, answers the command with an error, and keeps checking code."""
    import shutil

    import yaml

    rules = tmp_path / "rules"
    shutil.copytree(REPO / "rules", rules)
    data = yaml.safe_load((rules / "memory" / "cuda-oom.yaml").read_text())
    data["id"] = "memory.crasher"
    data["fix"]["variants"] = [{"when": {"stack": [["deepspeed"]]}, "text": "x"}]
    (rules / "memory" / "crasher.yaml").write_text(yaml.safe_dump(data))
    server = raw_lsp(cli_env(ROOTRANK_RULES=str(rules)))
    server.initialize(tmp_path)
    log_uri = (tmp_path / "job.log").as_uri()
    server.open(log_uri, ROOT_CAUSE_LOG.read_text(), "log")
    reply = server.request("workspace/executeCommand", {"command": "rootrank.diagnose",
                                                        "arguments": [ROOT_CAUSE_LOG.read_text()]}, timeout=30)
    assert "error" in reply or reply.get("result", {}).get("root_cause"), reply
    code_uri = (tmp_path / "train.py").as_uri()
    server.open(code_uri, TRAIN, "python")
    published = server.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                            and m["params"]["uri"] == code_uri, timeout=30, what="code diagnostics")
    assert published["params"]["diagnostics"], "code checks do not need the log library"
    hover = server.request("textDocument/hover", {"textDocument": {"uri": code_uri},
                                                  "position": {"line": 2, "character": 6}})
    assert "error" not in hover, hover
    assert server.proc.poll() is None
    assert server.shutdown() == 0


def _frame(message: dict) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _started_server(tmp_path: Path) -> subprocess.Popen[bytes]:
    """The server, initialized, with a checkpoint call open (so it has diagnostics to publish)."""
    process = subprocess.Popen([sys.executable, "-m", "rootrank.lsp"], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=cli_env(), cwd=REPO)
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(_frame({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                "params": {"processId": os.getpid(), "rootUri": tmp_path.as_uri(),
                                           "capabilities": {}}}))
    process.stdin.write(_frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
    process.stdin.write(_frame({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": (tmp_path / "train.py").as_uri(), "languageId": "python", "version": 1, "text": TRAIN}}}))
    process.stdin.flush()
    assert process.stdout.readline().startswith(b"Content-Length")  # the initialize answer is on its way
    return process


def test_client_stops_reading_while_its_stdin_stays_open(tmp_path: Path) -> None:
    """Regression (seen in the real-VS-Code test after a window reload): the reading end of our stdout closed
    while stdin stayed open. pygls logged a traceback for every message it could not send and kept serving
    no one; the server now exits at the first refused write, with one plain line on stderr."""
    process = _started_server(tmp_path)
    try:
        assert process.stdin is not None and process.stdout is not None
        process.stdout.close()
        for n in range(5):
            process.stdin.write(_frame({"jsonrpc": "2.0", "id": 10 + n, "method": "textDocument/hover", "params": {
                "textDocument": {"uri": (tmp_path / "train.py").as_uri()}, "position": {"line": 2, "character": 5}}}))
        process.stdin.flush()
        assert process.wait(timeout=20) == 1  # no shutdown request came: status 1, as when stdin ends
        assert process.stderr is not None
        stderr = process.stderr.read().decode()
        assert "Traceback" not in stderr, stderr
        assert "the client closed the connection" in stderr
    finally:
        process.kill()
        process.wait()


def test_ctrl_c_ends_the_server_quietly(tmp_path: Path) -> None:
    """A server started by hand in a terminal: Ctrl-C ends it at once, with no traceback (pygls' loop used
    to swallow the KeyboardInterrupt and then wait for its reader thread, which waited for stdin)."""
    process = _started_server(tmp_path)
    try:
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=20) == -signal.SIGINT
        assert process.stderr is not None
        stderr = process.stderr.read().decode()
        assert "Traceback" not in stderr, stderr
    finally:
        process.kill()
        process.wait()


def test_shutdown_while_requests_are_pending(raw_lsp, tmp_path: Path) -> None:
    """Regression (seen in the real-VS-Code test: "Stopping server failed"): pygls 2.1.1's shutdown cancels
    the pending requests while iterating over the dict that each cancellation removes itself from, so
    `shutdown` was answered with "RuntimeError: dictionary changed size during iteration". With two
    diagnoses running, `shutdown` answers null, each pending request gets an answer, and exit gives 0."""
    server = raw_lsp(cli_env(ROOTRANK_TEST_SLOW_LOGS="1"), command=[sys.executable, str(PATCHED_SERVER)])
    server.initialize(tmp_path)
    noise = "".join(f"[rank{i % 4}]:step {i} lr 3e-4 grad_norm 1.21\n" for i in range(3000))
    pending = [server.request_async("workspace/executeCommand", {"command": "rootrank.diagnose",
                                                                 "arguments": [noise + ROOT_CAUSE_LOG.read_text()]})
               for _ in range(2)]
    time.sleep(0.5)
    reply = server.request("shutdown", None)
    assert "error" not in reply, reply["error"]
    for request_id in pending:
        server.response(request_id)  # cancelled or finished: answered either way
    server.notify("exit", None)
    assert server.proc.wait(timeout=10) == 0
    assert "Traceback" not in server.stderr, server.stderr
