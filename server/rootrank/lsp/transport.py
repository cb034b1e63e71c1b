"""What arrives from the client before any feature sees it: the stdin, bounded, and the URIs, checked.

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
  read normally.

The header rule mirrors pygls' (`Content-Length: N` exactly, CRLF-terminated; the first one in a block
counts), so the reader and the loop always agree on where a body starts.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, BinaryIO
from urllib.parse import unquote, urlsplit

MAX_HEADER_LINE_BYTES = 8 * 1024
"""The longest header line read (a real one is `Content-Length: N` or `Content-Type: ...`, < 100 bytes)."""

MAX_MESSAGE_BYTES = 256 * 1024 * 1024
"""The largest message body read: the largest log the diagnose command reads (256 MiB) fits in it."""

MAX_URI_CHARS = 16 * 1024
"""The longest document URI accepted (a 4096-byte path, every byte percent-encoded, is 12 KiB)."""

_CHUNK = 64 * 1024
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_CONTENT_LENGTH = re.compile(rb"Content-Length: (\d+)\r\n")  # pygls' rule (its regex, fullmatched)
_MAX_DIGITS = 20  # int() refuses digit strings over 4300; any length this long is over the limit anyway
_IGNORED_HEADER = b"X-Rootrank-Skipped: 1\r\n"  # a header line pygls reads past


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

    def readline(self) -> bytes:
        while True:
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
                    if not self._discard(length):
                        return b""
                    self.on_skip(f"rootrank: skipped a message of {length} bytes (the limit is "
                                 f"{self.max_message} bytes)")
                    continue  # pygls saw no valid length in this block: go on to the next message's headers
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

    def _discard_rest_of_line(self) -> bool:
        while True:
            chunk = self.stream.readline(_CHUNK)
            if not chunk:
                return False
            if chunk.endswith(b"\n"):
                return True


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
