"""The two pipes to the client: what arrives (the stdin, bounded; the URIs, checked) and what goes back.

pygls' message loop reads through `BoundedReader`; the protocol (core.py) refuses a message whose
document URI fails `uri_problem`.

pygls 2 reads a message as header lines (`readline()`) until a blank line, then the body
(`read(Content-Length)`), with no limit on either: a header line is buffered whole however long it is, and
`Content-Length: 99999999999999` makes the buffered reader allocate the body up front (MemoryError, the
server dies) or wait for gigabytes that never come. `BoundedReader` is handed to `start_io` in place of
`sys.stdin.buffer` and keeps pygls' own loop: it hands on header lines and bodies within the limits, and
drops the rest in fixed-size chunks, so memory stays bounded and the stream stays framed:

- a header line longer than `MAX_HEADER_LINE_BYTES` is read to its end and replaced by an ignored header;
- a message whose Content-Length exceeds `MAX_MESSAGE_BYTES` is skipped whole (its headers are replaced
  by ignored ones, its body is read and discarded) and reported through `on_skip`; the next message is
  read normally. When the body's first `ID_SCAN_BYTES` show a request (a top-level `"id"`, and a
  `"method"` or `"params"`, which no response has; no `"result"`/`"error"`), pygls' loop is handed a small stand-in instead, a request for
  `SKIPPED_METHOD` with that id, which the protocol (core.py) refuses with InvalidRequest: the client
  gets an answer instead of waiting forever, as soon as the prefix has arrived, and in the order of
  the stream. A notification or a response is skipped without a word to the client (there is no one
  to answer); a request whose id comes after 64 KiB of params is too (the scan reads no further).
  Clients write the id early: vscode-jsonrpc `{"jsonrpc", "id", "method", "params"}`, pygls (lsprotocol's
  field order) `{"id", "params", "method", "jsonrpc"}`, so the params are where the size is.

The header rule mirrors pygls' (`Content-Length: N` exactly, CRLF-terminated; the first one in a block
counts), so the reader and the loop always agree on where a body starts.

`ClientOutput` is handed to `start_io` in place of `sys.stdout.buffer`. pygls writes every message with
`write` + `flush` and meets a closed pipe (the editor's window reloaded, the client killed) with a logged
traceback per message and a server that keeps serving nobody while its stdin stays open. The first failed
write or flush instead calls `on_gone` once (the server exits there); later writes are dropped quietly.
"""

from __future__ import annotations

import contextlib
import json
import re
import secrets
from collections.abc import Callable
from typing import Any, BinaryIO
from urllib.parse import unquote, urlsplit

MAX_HEADER_LINE_BYTES = 8 * 1024
"""The longest header line read (a real one is `Content-Length: N` or `Content-Type: ...`, < 100 bytes)."""

MAX_MESSAGE_BYTES = 256 * 1024 * 1024
"""The largest message body read: the largest log the diagnose command reads (256 MiB) fits in it."""

MAX_URI_CHARS = 16 * 1024
"""The longest document URI accepted (a 4096-byte path, every byte percent-encoded, is 12 KiB)."""

ID_SCAN_BYTES = 64 * 1024
"""How much of a skipped body is scanned for a request id (clients write the id before the params)."""

SKIPPED_METHOD = f"$/rootrank/skippedMessage/{secrets.token_hex(8)}"
"""The method of the stand-in for a skipped request: random per process, so no client can send it."""

_CHUNK = 64 * 1024
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_CONTENT_LENGTH = re.compile(rb"Content-Length: (\d+)\r\n")  # pygls' rule (its regex, fullmatched)
_MAX_DIGITS = 20  # int() refuses digit strings over 4300; any length this long is over the limit anyway
_IGNORED_HEADER = b"X-Rootrank-Skipped: 1\r\n"  # a header line pygls reads past
# One JSON token: a string (the unrolled form: linear, no nested repeat), a structural character,
# whitespace, or a run of anything else (a number, true/false/null, garbage). A string cut off by the end
# of the prefix matches nothing, which ends the scan.
_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[{}\[\]:,]|[ \t\r\n]+|[^"{}\[\]:, \t\r\n]+')
_INTEGER = re.compile(rb"-?\d{1,20}")
_MAX_ID_BYTES = 1024  # a longer string id is not echoed back (no client makes one)


class BoundedReader:
    """`readline()` and `read(n)` over a binary stream, within the limits above (see the module docstring).

    Called from pygls' reader thread only (one call at a time)."""

    def __init__(self, stream: BinaryIO, on_skip: Callable[[str], None] | None = None,
                 max_line: int | None = None, max_message: int | None = None) -> None:
        self.stream = stream
        self.on_skip = on_skip or (lambda message: None)
        self.max_line = max_line or MAX_HEADER_LINE_BYTES
        self.max_message = max_message or MAX_MESSAGE_BYTES
        self._length: int | None = None  # the Content-Length of the header block being read
        self._oversized = False  # that length is over the limit: the message is skipped
        self._skip = 0  # bytes of a skipped body still to drop before the next header line
        self._stand_in: list[bytes] = []  # header lines of a stand-in request, handed out before the stream's
        self._stand_in_body: bytes | None = None  # its body, for the read() that follows them

    def readline(self) -> bytes:
        if self._stand_in:
            return self._stand_in.pop(0)
        while True:
            if self._skip:
                skip, self._skip = self._skip, 0
                if not self._discard(skip):
                    return b""
            line = self.stream.readline(self.max_line)
            if not line:
                return line
            if not line.endswith(b"\n") and len(line) >= self.max_line:
                if not self._discard_rest_of_line():
                    return b""
                self.on_skip(f"rootrank: skipped a header line longer than {self.max_line} bytes")
                return _IGNORED_HEADER
            if not line.strip():  # the end of a header block
                oversized, length = self._oversized, self._length
                self._length, self._oversized = None, False
                if oversized and length is not None:
                    prefix = self._read_up_to(min(length, ID_SCAN_BYTES))
                    if prefix is None:
                        return b""
                    self._skip = length - len(prefix)  # dropped on the next call, after the stand-in
                    message = f"rootrank: skipped a message of {length} bytes (the limit is {self.max_message} bytes)"
                    self.on_skip(message)
                    msg_id = request_id(prefix)
                    if msg_id is None:
                        continue  # pygls saw no valid length in this block: go on to the next message's headers
                    body = json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": SKIPPED_METHOD,
                                       "params": {"message": message.removeprefix("rootrank: ")}}).encode()
                    self._stand_in = [b"\r\n"]
                    self._stand_in_body = body
                    return b"Content-Length: %d\r\n" % len(body)
                return line
            match = _CONTENT_LENGTH.fullmatch(line)
            if match is None:
                return line
            if self._length is None:
                digits = match.group(1)
                self._length = int(digits) if len(digits) <= _MAX_DIGITS else 10 ** _MAX_DIGITS
                self._oversized = self._length > self.max_message
            # in a skipped block every length is hidden: pygls would take a later one as the body's
            return _IGNORED_HEADER if self._oversized else line

    def read(self, n: int) -> bytes:
        if self._stand_in_body is not None:
            body, self._stand_in_body = self._stand_in_body, None
            if len(body) == n:
                return body
        if n > self.max_message:  # never asked for by pygls' loop (readline hid the length), kept as a guard
            self._discard(n)
            return b"{}"
        return self.stream.read(n)

    def _discard(self, n: int) -> bool:
        """Read and drop `n` bytes; False at end of input."""
        while n > 0:
            chunk = self.stream.read(min(n, _CHUNK))
            if not chunk:
                return False
            n -= len(chunk)
        return True

    def _read_up_to(self, n: int) -> bytes | None:
        """The next `n` bytes (a pipe may hand them over in pieces); None at end of input."""
        pieces: list[bytes] = []
        while n > 0:
            chunk = self.stream.read(n)
            if not chunk:
                return None
            pieces.append(chunk)
            n -= len(chunk)
        return b"".join(pieces)

    def _discard_rest_of_line(self) -> bool:
        while True:
            chunk = self.stream.readline(_CHUNK)
            if not chunk:
                return False
            if chunk.endswith(b"\n"):
                return True


def request_id(prefix: bytes) -> int | str | None:
    """The id of the JSON-RPC request whose body starts with `prefix`, or None when the prefix does not show
    one: no top-level `"id"` (an integer or a string) and `"method"` (a string) or `"params"` before it
    ends, or a `"result"`/`"error"` (a response: answering it would resolve some other request of the
    client's; a response never has `params`).

    A token scan that tracks nesting, so that an `"id"` inside the params is never taken for the
    request's; strings are matched whole, so a quote or brace inside one changes nothing."""
    depth = 0
    key: bytes | None = None  # the top-level key whose value comes next
    expect_key = False
    found: int | str | None = None
    method = False  # a method or params seen: a request's
    position = 0
    while position < len(prefix):
        match = _TOKEN.match(prefix, position)
        if match is None:  # a string cut off by the end of the prefix
            break
        position = match.end()
        token = match.group()
        if token[0] in b" \t\r\n":
            continue
        if token in (b"{", b"["):
            if depth == 0 and token == b"[":
                return None  # a batch: pygls does not take them, nor is there one id to answer
            if depth == 1 and key in (b"result", b"error"):
                return None
            if depth == 1 and key == b"params":
                method = True  # only a request has params (a notification has no id)
            depth += 1
            expect_key = depth == 1
            key = None
            continue
        if token in (b"}", b"]"):
            depth -= 1
            if depth <= 0:
                break
            continue
        if depth != 1 or token == b":":
            continue
        if token == b",":
            expect_key, key = True, None
            continue
        if expect_key:
            key = _key(token)
            expect_key = False
            continue
        if key in (b"result", b"error"):
            return None
        if key == b"id":
            found = _id_value(token)
        elif key == b"method":
            method = method or token.startswith(b'"')
        elif key == b"params":
            method = True
        key = None
    return found if method else None


class ClientOutput:
    """The stdout pygls writes to: `on_gone` runs once, at the first write or flush the pipe refuses.

    Written from the event loop's thread only (pygls hands worker threads' messages to the loop)."""

    def __init__(self, stream: BinaryIO, on_gone: Callable[[BaseException], None]) -> None:
        self.stream = stream
        self.on_gone = on_gone
        self.gone = False

    def write(self, data: bytes) -> int:
        if not self.gone:
            try:
                return self.stream.write(data)
            except (OSError, ValueError) as exc:  # ValueError: the stream was closed in this process
                self._lost(exc)
        return len(data)

    def flush(self) -> None:
        if not self.gone:
            try:
                self.stream.flush()
            except (OSError, ValueError) as exc:
                self._lost(exc)

    def close(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.stream.close()

    def _lost(self, exc: BaseException) -> None:
        self.gone = True
        self.on_gone(exc)


def _key(token: bytes) -> bytes | None:
    if not token.startswith(b'"') or len(token) > 64:
        return None
    if b"\\" not in token:
        return token[1:-1]
    try:
        return str(json.loads(token)).encode("utf-8", "replace")  # "\u0069d" is "id" to pygls too
    except ValueError:
        return None


def _id_value(token: bytes) -> int | str | None:
    if _INTEGER.fullmatch(token):
        return int(token)
    if token.startswith(b'"') and len(token) <= _MAX_ID_BYTES:
        try:
            value = json.loads(token)
        except ValueError:
            return None
        return value if isinstance(value, str) else None
    return None


def uri_problem(uri: Any) -> str | None:
    """Why `uri` cannot name a document (as a short phrase for an error message), or None when it can.

    Refused: not a string, longer than MAX_URI_CHARS, not encodable (a lone surrogate), control characters
    (a NUL, raw or as `%00`, ends a path in every system call), or what `urllib.parse` cannot split."""
    if not isinstance(uri, str):
        return f"the document URI must be a string, not {type(uri).__name__}"
    if len(uri) > MAX_URI_CHARS:
        return f"the document URI is longer than {MAX_URI_CHARS} characters"
    try:
        uri.encode("utf-8")
    except UnicodeEncodeError:
        return "the document URI is not valid Unicode"
    if _CONTROL.search(uri) or _CONTROL.search(unquote(uri)):
        return f"the document URI contains control characters: {uri[:200]!a}"
    try:
        urlsplit(uri)
    except ValueError as exc:
        return f"the document URI cannot be parsed ({exc}): {uri[:200]!a}"
    return None
