"""Issue #22, item 17: the language server's transport under hostile framing, spoken to over raw stdio bytes.

Oversized Content-Length values and header lines are read in bounded memory and skipped; every request
gets an answer (InvalidRequest after `shutdown` or when not JSON-RPC 2.0, InvalidParams for a document
URI no file system can hold), and no response carries the server's traceback.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from rootrank.lsp.transport import (
    ID_SCAN_BYTES,
    MAX_HEADER_LINE_BYTES,
    MAX_MESSAGE_BYTES,
    MAX_URI_CHARS,
    BoundedReader,
    request_id,
)
from tests.trust.conftest import PY, RawLsp

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the server's /proc status")

HOVER = {"textDocument": {"uri": "file:///nowhere/x.py"}, "position": {"line": 0, "character": 0}}
SMALL_LIMIT = 64 * 1024
# The real server with a small message limit, so that a message over it can be sent whole in a test.
SMALL_LIMIT_SERVER = [PY, "-c", f"import sys, rootrank.lsp.transport as t; t.MAX_MESSAGE_BYTES = {SMALL_LIMIT}; "
                      "from rootrank.lsp.server import main; sys.exit(main())"]


def _status_kib(server: RawLsp, field: str) -> int:
    with open(f"/proc/{server.proc.pid}/status") as status:
        return int(next(line.split()[1] for line in status if line.startswith(field + ":")))


def _write(server: RawLsp, data: bytes) -> None:
    assert server.proc.stdin is not None
    server.proc.stdin.write(data)
    server.proc.stdin.flush()


def _request(method: str, params: Any, msg_id: int) -> bytes:
    body = json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _no_traceback(server: RawLsp) -> None:
    server.drain()
    for message in server.seen:
        assert "traceback" not in json.dumps(message).lower(), message


@pytest.mark.parametrize("length", [b"99999999999999", b"3000000000", b"9" * 5000, b"%d" % (MAX_MESSAGE_BYTES + 1)])
def test_a_content_length_over_the_limit_costs_no_memory(raw_lsp, tmp_path: Path, length: bytes) -> None:
    """The body announced is never allocated: the server stays up in bounded memory, reading it to throw away,
    and leaves cleanly when the client closes the stream."""
    server = raw_lsp()
    server.initialize(tmp_path)
    before = _status_kib(server, "VmHWM")
    _write(server, b"Content-Length: " + length + b"\r\n\r\n" + b"x" * (4 * 1024 * 1024))
    time.sleep(1.5)
    assert server.proc.poll() is None, server.stderr[-2000:]
    grown_mib = (_status_kib(server, "VmHWM") - before) / 1024
    assert grown_mib < 32, f"the server's peak memory grew by {grown_mib:.0f} MiB"
    assert server.proc.stdin is not None
    server.proc.stdin.close()
    assert server.proc.wait(15) == 1  # end of input without shutdown: status 1, as the LSP asks
    assert "MemoryError" not in server.stderr and "Traceback" not in server.stderr, server.stderr[-3000:]


def test_a_message_over_the_limit_is_skipped_and_the_next_one_answered(raw_lsp, tmp_path: Path) -> None:
    server = raw_lsp(command=SMALL_LIMIT_SERVER)
    server.initialize(tmp_path)
    big = dict(HOVER, junk="j" * (2 * SMALL_LIMIT))
    # over the limit, then a block whose first length is over it and a later one is not (both hidden)
    _write(server, _request("textDocument/hover", big, 900))
    body = json.dumps({"jsonrpc": "2.0", "id": 901, "method": "textDocument/hover", "params": big}).encode()
    _write(server, b"Content-Length: %d\r\nContent-Length: 10\r\n\r\n" % len(body) + body)
    _write(server, _request("textDocument/hover", HOVER, 902))
    assert server.response(902) == {"jsonrpc": "2.0", "id": 902, "result": None}
    skipped = [m for m in server.seen if m.get("method") == "window/logMessage"
               and "skipped a message of" in m["params"]["message"]]
    assert len(skipped) == 2, server.seen
    for msg_id in (900, 901):  # skipped unread, and still answered: the id comes from the body's start
        error = server.response(msg_id).get("error", {})
        assert error.get("code") == -32600 and "too large" in error.get("message", ""), error
    assert not [m for m in server.seen if m.get("id") in (900, 901) and "result" in m], "a skipped message was read"
    # exactly at the limit is read
    at_limit = dict(HOVER, junk="")
    size = len(json.dumps({"jsonrpc": "2.0", "id": 903, "method": "textDocument/hover", "params": at_limit}))
    at_limit["junk"] = "j" * (SMALL_LIMIT - size)
    raw = json.dumps({"jsonrpc": "2.0", "id": 903, "method": "textDocument/hover", "params": at_limit}).encode()
    assert len(raw) == SMALL_LIMIT
    _write(server, b"Content-Length: %d\r\n\r\n" % len(raw) + raw)
    assert "result" in server.response(903)
    assert server.shutdown() == 0


def test_every_request_too_large_to_read_is_answered(raw_lsp, tmp_path: Path) -> None:
    """A request skipped for its size gets InvalidRequest for its own id (an int or a string, wherever the
    params put an `id` of their own), and promptly: from the body's first 64 KiB, even when the rest of an
    announced 100 GB never comes. Nothing is answered for a notification or a response (a client's answer
    to a server request) too large to read."""
    server = raw_lsp(command=SMALL_LIMIT_SERVER)
    server.initialize(tmp_path)
    junk = "j" * (2 * SMALL_LIMIT)
    nested = {"textDocument": {"uri": "file:///nowhere/x.py"}, "position": {"line": 0, "character": 0},
              "context": {"id": 999, "items": [{"id": 998, "method": "x"}], "text": '"id": 997, {"method"'}}
    cases: list[tuple[Any, dict[str, Any]]] = [
        (930, {"jsonrpc": "2.0", "id": 930, "method": "textDocument/hover", "params": dict(nested, junk=junk)}),
        ("req-931", {"jsonrpc": "2.0", "id": "req-931", "method": "textDocument/hover", "params": {"junk": junk}}),
        # params before the id: the nested ids are not taken for the request's
        (932, {"jsonrpc": "2.0", "params": dict(nested, junk="j" * 100), "method": "textDocument/hover", "id": 932,
               "more": junk}),
        # pygls' order (lsprotocol's fields): the method after 128 KiB of params
        (933, {"id": 933, "params": dict(nested, junk=junk), "method": "textDocument/hover", "jsonrpc": "2.0"}),
    ]
    for msg_id, message in cases:
        _write(server, b"Content-Length: %d\r\n\r\n" % len(body := json.dumps(message).encode()) + body)
        error = server.response(msg_id).get("error", {})  # type: ignore[arg-type]
        assert error.get("code") == -32600 and f"{len(body)} bytes" in error.get("message", ""), (msg_id, error)
    before = len(server.seen)
    for silent in ({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"junk": junk, "id": 940}},
                   {"jsonrpc": "2.0", "id": 941, "result": {"junk": junk}},
                   {"jsonrpc": "2.0", "id": 942, "error": {"code": 1, "message": junk}, "method": "x"}):
        body = json.dumps(silent).encode()
        _write(server, b"Content-Length: %d\r\n\r\n" % len(body) + body)
    assert "result" in server.request("textDocument/hover", HOVER)
    answered = [m for m in server.seen[before:] if m.get("id") in (940, 941, 942, 998, 999, 997)]
    assert not answered, answered
    # 100 GB announced, 80 KiB sent: the answer comes from what did arrive
    head = json.dumps({"jsonrpc": "2.0", "id": 950, "method": "textDocument/hover", "params": {"junk": ""}})
    _write(server, b"Content-Length: 100000000000\r\n\r\n" + head[:-3].encode() + b"j" * (80 * 1024))
    error = server.response(950).get("error", {})
    assert error.get("code") == -32600 and "100000000000 bytes" in error.get("message", ""), error
    _no_traceback(server)


def test_the_request_id_scan_of_a_skipped_body() -> None:
    """The id scan over hostile bodies: cut anywhere, nested deep, full of quotes and escapes; it finds the
    top-level id of a request or nothing, in bounded time over the 64 KiB it is given."""
    request = {"jsonrpc": "2.0", "id": 12, "method": "m", "params": {"id": 5, "s": 'a\\"id": 6, "x\\'}}
    raw = json.dumps(request).encode()
    assert request_id(raw) == 12
    for cut in range(len(raw)):  # every prefix: the id once id and method are both in, else None
        found = request_id(raw[:cut])
        assert found in (None, 12), (cut, found)
    assert request_id(raw[:raw.index(b'"params"')]) == 12
    assert request_id(json.dumps({"method": "m", "id": "\u00e9\\\"x"}).encode()) == "\u00e9\\\"x"
    assert request_id(b'{"\\u0069d": 4, "method": "m"}') == 4
    assert request_id(b'{"id": 5, "params": {"text": "' + b"x" * 70000) == 5  # pygls' order, cut in the params
    assert request_id(b'{"id": 6, "params": [1, 2], "result": null}') is None
    for body in (b'{"id": 1.5, "method": "m"}', b'{"id": null, "method": "m"}', b'{"id": [1], "method": "m"}',
                 b'{"id": 1, "method": 2}', b'{"id": 1}', b'{"id": 1, "result": {"params": 1}}', b'[{"id": 1, "method": "m"}]', b'{"id": 1, "result": 2, '
                 b'"method": "m"}', b'{"method": "m", "error": {}, "id": 1}', b"", b"{", b'"id": 1, "method": "m"',
                 b'{"id": ' + b"9" * 30 + b', "method": "m"}', b'{"id": "' + b"s" * 2000 + b'", "method": "m"}'):
        assert request_id(body) is None, body
    deep = b'{"method": "m", "params": ' + b"[" * 40000 + b'{"id": 3}' + b"]" * 40000 + b', "id": 8}'
    assert request_id(deep[:ID_SCAN_BYTES]) is None and request_id(deep) == 8
    hostile = [b'{"id": 2, "method": "m", "p": "' + b'\\"' * 30000, b'{"method":"m","id":2,' + b'"\\' * 30000,
               b'{"method": "m", "id": 2' + b", " * 30000, b"{" + b'"a":"b",' * 8000]
    start = time.monotonic()
    for body in hostile:
        request_id(body[:ID_SCAN_BYTES])
    assert time.monotonic() - start < 5


def test_a_huge_header_line_is_not_buffered(raw_lsp, tmp_path: Path) -> None:
    server = raw_lsp()
    server.initialize(tmp_path)
    before = _status_kib(server, "VmHWM")
    line = b"X-" + b"h" * (48 * 1024 * 1024)
    for chunk in range(0, len(line), 1 << 20):
        _write(server, line[chunk:chunk + (1 << 20)])
    _write(server, b"\r\n" + _request("textDocument/hover", HOVER, 910))
    assert server.response(910, timeout=60) == {"jsonrpc": "2.0", "id": 910, "result": None}
    # a header line of digits too long for int() before a valid message
    _write(server, b"Content-Length: " + b"1" * (MAX_HEADER_LINE_BYTES * 2) + b"\r\n")
    _write(server, _request("textDocument/hover", HOVER, 911))
    assert "result" in server.response(911)
    grown_mib = (_status_kib(server, "VmHWM") - before) / 1024
    assert grown_mib < 16, f"the server's peak memory grew by {grown_mib:.0f} MiB reading a 48 MiB header line"
    assert server.shutdown() == 0


def test_every_request_is_answered(raw_lsp, tmp_path: Path) -> None:
    server = raw_lsp()
    server.initialize(tmp_path)
    for msg_id, message in ((920, {"jsonrpc": "1.0", "id": 920, "method": "textDocument/hover", "params": HOVER}),
                            (921, {"id": 921, "method": "textDocument/hover", "params": HOVER}),
                            (922, {"jsonrpc": 2, "id": 922, "method": "shutdown"})):
        server.send_raw(json.dumps(message).encode())
        reply = server.response(msg_id)
        assert reply.get("error", {}).get("code") == -32600, reply
    for body in (b"[]", b"[1, 2]", b"7", b'"x"', b"null", b"[" * 100_000):  # no id to answer: ignored
        server.send_raw(body)
    assert "result" in server.request("textDocument/hover", HOVER)
    reply = server.request("shutdown", None)
    assert reply == {"jsonrpc": "2.0", "id": server.next_id, "result": None}
    for method, params in (("textDocument/hover", HOVER), ("shutdown", None), ("initialize", {"capabilities": {}}),
                           ("workspace/executeCommand", {"command": "rootrank.diagnose", "arguments": ["x"]})):
        reply = server.request(method, params, timeout=10)
        assert reply.get("error", {}).get("code") == -32600, (method, reply)
    server.notify("textDocument/didOpen", {"textDocument": {"uri": "file:///late.log", "languageId": "log",
                                                            "version": 1, "text": "RuntimeError: x\n"}})
    server.notify("exit", None)
    assert server.proc.wait(10) == 0
    _no_traceback(server)


def _bad_uris() -> list[str]:
    return ["file:///tmp/a\x00b.py", "file:///tmp/a%00b.py", "file:///tmp/%00", "\x00", "file:///tmp/a\x1b[31m.py",
            "file:///tmp/a%0Ab.log", "file://host\x00/x.log", "http://[::1/x", "file:///tmp/\ud800.py",
            "file:///tmp/" + "a" * (MAX_URI_CHARS + 1)]


def _raw_json(value: Any) -> bytes:
    # json.dumps keeps a lone surrogate as the escape \ud800, which is what a hostile client sends
    return json.dumps(value).encode()


def test_bad_document_uris_are_invalid_params(raw_lsp, tmp_path: Path) -> None:
    server = raw_lsp()
    server.initialize(tmp_path)
    for uri in _bad_uris():
        server.send_raw(_raw_json({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": uri, "languageId": "log", "version": 1, "text": "RuntimeError: boom\n"}}}))
        for method, params in (
            ("textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}}),
            ("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": {
                "start": {"line": 0, "character": 0}, "end": {"line": 1, "character": 0}},
                "context": {"diagnostics": []}}),
            ("workspace/executeCommand", {"command": "rootrank.diagnose", "arguments": ["", uri]}),
            ("workspace/executeCommand", {"command": "rootrank.diagnose", "arguments": [{"text": "", "uri": uri}]}),
        ):
            server.next_id += 1
            server.send_raw(_raw_json({"jsonrpc": "2.0", "id": server.next_id, "method": method, "params": params}))
            reply = server.response(server.next_id)
            assert reply.get("error", {}).get("code") == -32602, (uri, method, reply)
    time.sleep(0.5)
    server.drain()
    published = [m["params"]["uri"] for m in server.seen if m.get("method") == "textDocument/publishDiagnostics"]
    assert not published, f"a document with a bad URI was opened: {published}"
    # a good URI still works, and nothing sent out carried a traceback
    good = (tmp_path / "fine.log").as_uri()
    server.open(good, "RuntimeError: CUDA error: out of memory\n")
    server.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == good,
                what="diagnostics of a document with a good URI")
    _no_traceback(server)
    assert server.shutdown() == 0


class _Chunks:
    """A stream that records how much was asked for at once, to show the reader asks in bounded sizes."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos, self.largest = data, 0, 0

    def readline(self, limit: int = -1) -> bytes:
        end = self.data.find(b"\n", self.pos)
        end = len(self.data) if end < 0 else end + 1
        if limit >= 0:
            end = min(end, self.pos + limit)
        self.largest = max(self.largest, end - self.pos if limit < 0 else limit)
        line, self.pos = self.data[self.pos:end], end
        return line

    def read(self, n: int) -> bytes:
        self.largest = max(self.largest, n)
        chunk, self.pos = self.data[self.pos:self.pos + n], self.pos + n
        return chunk


def test_the_reader_asks_for_bounded_amounts() -> None:
    """The unit under the subprocess tests: what pygls' loop sees through the reader, and the sizes the reader
    asks its stream for, for a message over the limit followed by one within it."""
    skipped: list[str] = []
    over = b"y" * 5000
    stream = _Chunks(b"Content-Length: 5000\r\nX-A: b\r\n\r\n" + over + b"Z" * 20000 + b"\n"
                     + b"Content-Length: 2\r\n\r\n{}")
    reader = BoundedReader(stream, skipped.append, max_line=1024, max_message=4096)  # type: ignore[arg-type]
    seen = [reader.readline(), reader.readline()]
    assert seen == [b"X-Rootrank-Skipped: 1\r\n", b"X-A: b\r\n"]
    assert reader.readline() == b"X-Rootrank-Skipped: 1\r\n"  # the blank line ended the skipped message; then
    assert skipped == ["rootrank: skipped a message of 5000 bytes (the limit is 4096 bytes)",
                       "rootrank: skipped a header line longer than 1024 bytes"]
    assert reader.readline() == b"Content-Length: 2\r\n"
    assert reader.readline() == b"\r\n"
    assert reader.read(2) == b"{}"
    assert reader.readline() == b""
    assert stream.largest <= 64 * 1024
