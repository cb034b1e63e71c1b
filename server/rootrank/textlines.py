"""Text split into lines the way editors and the Language Server Protocol count them (`\r\n`, `\r` and
`\n` each end a line). Shared by the engine's call reader and the language server's positions."""

from __future__ import annotations

import re

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def split_lines(text: str) -> list[str]:
    """The text's lines as LSP counts them, without their line breaks."""
    return _LINE_BREAK.split(text) if "\r" in text else text.split("\n")
