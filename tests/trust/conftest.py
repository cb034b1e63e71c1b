"""Helpers for the trust tests: the CLI and the language server as subprocesses, with peak memory, a
network/process audit hook (a `sitecustomize.py` on PYTHONPATH), and a raw JSON-RPC client over stdio."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
FIXTURE_LOGS = REPO / "tests" / "fixtures" / "logs"
PY = sys.executable

# Audit events that mean rootrank reached for the network or ran a program.
SITECUSTOMIZE = r'''
import os, sys

_LOG = os.environ.get("ROOTRANK_AUDIT_LOG")
_WATCH_PREFIXES = ("socket.", "subprocess.", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork",
                   "urllib.Request", "http.client.")

def _hook(event, args, _log=_LOG, _open=open, _repr=repr):
    if not event.startswith(_WATCH_PREFIXES):
        return
    if event == "socket.__new__":
        # asyncio's self-pipe is an AF_UNIX socketpair: not the network
        family = args[1] if len(args) > 1 else None
        if family == 1:  # socket.AF_UNIX
            return
    try:
        with _open(_log, "a", encoding="utf-8") as handle:
            handle.write(event + "\t" + _repr(args)[:300] + "\n")
    except Exception:
        pass

if _LOG:
    sys.addaudithook(_hook)
'''


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    max_rss_mib: float
    killed: bool = False  # ran past its timeout and was killed


def cli_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROOTRANK_")}
    env.update({"PYTHONPATH": str(REPO / "server"), "NO_COLOR": "1", "PYTHONDONTWRITEBYTECODE": "1"})
    env.update(extra)
    return env


# The CLI run in-process by a wrapper that records its own peak RSS (VmHWM, reset at exec) when it exits:
# wait4's ru_maxrss of a child starts at the size of the process that forked it (the test runner).
_PEAK_WRAPPER = (
    "import atexit, os, runpy, sys\n"
    "def _peak(path=os.environ.get('RR_TEST_PEAK_FILE')):\n"
    "    try:\n"
    "        with open('/proc/self/status') as status:\n"
    "            hwm = next(line.split()[1] for line in status if line.startswith('VmHWM:'))\n"
    "        with open(path, 'w') as out:\n"
    "            out.write(hwm)\n"
    "    except Exception:\n"
    "        pass\n"
    "if os.environ.get('RR_TEST_PEAK_FILE'):\n"
    "    atexit.register(_peak)\n"
    "sys.argv = ['rootrank', *sys.argv[1:]]\n"
    "runpy.run_module('rootrank', run_name='__main__', alter_sys=True)\n")


def run_cli(args: list[str], *, stdin: bytes | Path | None = None, env: dict[str, str] | None = None,
            timeout: float = 60, cwd: Path | None = None, allow_timeout: bool = False) -> Run:
    """`python -m rootrank ARGS` in a child; its own peak RSS (VmHWM where Linux has it, else wait4's)."""
    import tempfile

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, tempfile.TemporaryFile() as inp, \
            tempfile.TemporaryDirectory() as peak_dir:
        peak_file = Path(peak_dir) / "peak"
        env = dict(env or cli_env(), RR_TEST_PEAK_FILE=str(peak_file))
        if isinstance(stdin, Path):
            stdin_handle: Any = open(stdin, "rb")  # noqa: SIM115
        else:
            inp.write(stdin or b"")
            inp.seek(0)
            stdin_handle = inp
        start = time.monotonic()
        proc = subprocess.Popen([PY, "-c", _PEAK_WRAPPER, *args], stdin=stdin_handle, stdout=out, stderr=err,
                                env=env, cwd=cwd or REPO)
        timer = threading.Timer(timeout, lambda: os.kill(proc.pid, signal.SIGKILL))
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
            if stdin_handle is not inp:
                stdin_handle.close()
        proc.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.monotonic() - start
        out.seek(0)
        err.seek(0)
        peak = int(peak_file.read_text()) if peak_file.is_file() and peak_file.read_text().isdigit() else usage.ru_maxrss
        result = Run(proc.returncode, out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace"),
                     seconds, peak / 1024, proc.returncode == -signal.SIGKILL)
    assert allow_timeout or not result.killed, f"rootrank {args} ran past {timeout}s"
    return result


def assert_well_behaved(run: Run, *, expect_json: bool = True) -> Any:
    """The CLI's promise: exit 0/1/2, never a traceback, one line on 2, valid JSON on 0/1."""
    assert not run.killed, f"ran past its time limit ({run.seconds:.1f}s)"
    assert run.returncode in (0, 1, 2), (run.returncode, run.stderr[-2000:])
    assert "Traceback (most recent call last)" not in run.stderr, run.stderr[-3000:]
    assert "internal error" not in run.stderr, run.stderr[-2000:]
    if run.returncode == 2:
        lines = [line for line in run.stderr.splitlines() if line.strip()]
        assert len(lines) == 1, run.stderr
        assert lines[0].startswith("rootrank: "), run.stderr
        return None
    if expect_json:
        data = json.loads(run.stdout)
        assert data["schema"] == "rootrank.diagnosis/2"
        return data
    return None


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: a trust test that takes seconds (still in the default suite)")


@pytest.fixture
def audit(tmp_path: Path):
    """(env, read_events): an environment whose Python children record network/process audit events."""
    site = tmp_path / "audit_site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    log = tmp_path / "audit.log"
    log.write_text("")
    env = cli_env(ROOTRANK_AUDIT_LOG=str(log))
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(REPO / "server")])

    def events() -> list[str]:
        return [line for line in log.read_text().splitlines() if line.strip()]

    return env, events


# --------------------------------------------------------------------------- raw JSON-RPC client


class RawLsp:
    """The language server as a child process, spoken to in raw JSON-RPC frames over its stdin/stdout."""

    def __init__(self, env: dict[str, str] | None = None, cwd: Path | None = None,
                 command: list[str] | None = None, memory_limit: int | None = None) -> None:
        def limit() -> None:  # an address-space cap, for tests that could make the server allocate without bound
            import resource

            if memory_limit:
                resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))

        self.proc = subprocess.Popen(command or [PY, "-m", "rootrank", "lsp"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env or cli_env(),
                                     cwd=cwd or REPO, preexec_fn=limit if memory_limit else None)
        self.messages: queue.Queue[dict[str, Any]] = queue.Queue()
        self.seen: list[dict[str, Any]] = []
        self.next_id = 0
        self.stderr_chunks: list[bytes] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._drain_stderr, daemon=True).start()

    def _drain_stderr(self) -> None:
        assert self.proc.stderr is not None
        for chunk in iter(lambda: self.proc.stderr.read1(65536), b""):  # type: ignore[union-attr]
            self.stderr_chunks.append(chunk)

    @property
    def stderr(self) -> str:
        return b"".join(self.stderr_chunks).decode("utf-8", "replace")

    def _read(self) -> None:
        stream = self.proc.stdout
        assert stream is not None
        while True:
            headers: dict[str, str] = {}
            while True:
                line = stream.readline()
                if not line:
                    return
                line = line.strip()
                if not line:
                    break
                key, _, value = line.decode("ascii", "replace").partition(":")
                headers[key.strip().lower()] = value.strip()
            body = stream.read(int(headers.get("content-length", "0")))
            try:
                message = json.loads(body)
            except ValueError:
                message = {"unparsable": body.decode("utf-8", "replace")}
            if "method" in message and "id" in message:  # a request from the server: answer it
                self._answer_server_request(message)
            self.messages.put(message)

    def _answer_server_request(self, message: dict[str, Any]) -> None:
        method = message["method"]
        result: Any = None
        if method == "workspace/configuration":
            result = [{} for _ in message.get("params", {}).get("items", [])]
        self.send_raw(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode())

    def send_raw(self, body: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def notify(self, method: str, params: Any) -> None:
        self.send_raw(json.dumps({"jsonrpc": "2.0", "method": method, "params": params}).encode())

    def request_async(self, method: str, params: Any) -> int:
        self.next_id += 1
        self.send_raw(json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method,
                                  "params": params}).encode())
        return self.next_id

    def wait(self, predicate: Any, timeout: float = 30, what: str = "message") -> dict[str, Any]:
        for message in self.seen:
            if predicate(message):
                return message
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"timed out waiting for {what}; stderr:\n{self.stderr[-3000:]}")
            try:
                message = self.messages.get(timeout=left)
            except queue.Empty:
                continue
            self.seen.append(message)
            if predicate(message):
                return message

    def response(self, request_id: int, timeout: float = 30) -> dict[str, Any]:
        return self.wait(lambda m: m.get("id") == request_id and "method" not in m, timeout, f"response {request_id}")

    def request(self, method: str, params: Any, timeout: float = 30) -> dict[str, Any]:
        return self.response(self.request_async(method, params), timeout)

    def initialize(self, root: Path) -> dict[str, Any]:
        reply = self.request("initialize", {
            "processId": os.getpid(), "rootUri": root.as_uri(),
            "workspaceFolders": [{"uri": root.as_uri(), "name": root.name}],
            "capabilities": {"textDocument": {"hover": {"contentFormat": ["markdown", "plaintext"]},
                                              "publishDiagnostics": {"versionSupport": True},
                                              "codeAction": {"codeActionLiteralSupport": {"codeActionKind": {
                                                  "valueSet": ["quickfix", "source.fixAll"]}}}},
                             "workspace": {"configuration": False}},
            "initializationOptions": {}})
        assert "result" in reply, reply
        self.notify("initialized", {})
        return reply

    def open(self, uri: str, text: str, language_id: str = "log", version: int = 1) -> None:
        self.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": language_id,
                                                              "version": version, "text": text}})

    def change(self, uri: str, version: int, text: str) -> None:
        self.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                               "contentChanges": [{"text": text}]})

    def published(self, uri: str) -> list[dict[str, Any]]:
        self.drain()
        return [m["params"] for m in self.seen
                if m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri]

    def drain(self) -> None:
        while True:
            try:
                self.seen.append(self.messages.get_nowait())
            except queue.Empty:
                return

    def shutdown(self, timeout: float = 10) -> int:
        reply = self.request("shutdown", None, timeout)
        assert "error" not in reply, reply
        self.notify("exit", None)
        return self.proc.wait(timeout)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass


@pytest.fixture
def raw_lsp():
    servers: list[RawLsp] = []

    def start(env: dict[str, str] | None = None, cwd: Path | None = None, command: list[str] | None = None,
              memory_limit: int | None = None) -> RawLsp:
        server = RawLsp(env, cwd, command, memory_limit)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


def fixture_log(name: str) -> Path:
    return FIXTURE_LOGS / name / "log.txt"


ROOT_CAUSE_LOG = fixture_log("process.uncaught-exception--rank2-valueerror-step3-no-record")
