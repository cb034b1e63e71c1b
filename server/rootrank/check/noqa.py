"""`# noqa` comments: where a checked file's comments are, found by that file's own tokenizer, never by
searching its text for `#` (a `# noqa` inside a string is a string, not a comment).

Python is read with `tokenize`, from the finding's own position (code, so no string or comment is open
there) for as many lines as its statement's physical line takes: a noqa costs the same in a 10-line
file and a 100k-line one. YAML is read with PyYAML's scanner (a `#` inside a scalar is not a comment),
launch scripts with a small shell lexer (quotes, backslash continuations), each whole (`scan`).
`comments_at` gives the `Comments` that matter for one finding: the comment of its line and the lines
whose end no comment can follow (inside a multi-line string, or continued with a backslash).
`silenced` says whether a finding's line carries a noqa for it; `insertion` places a new
`# noqa: <id>` (or extends a line's noqa list) for "Ignore on this line" in the language server. In
Python the comment for a line that ends inside a multi-line string goes where the string ends (the
same statement); in YAML and shell no edit is offered there.
"""

from __future__ import annotations

import functools
import io
import re
import tokenize
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from rootrank.model import Edit

__all__ = ["NOQA", "Comment", "Comments", "Text", "codes_of", "comments_at", "insertion", "language_of", "scan",
           "silenced"]

# Matched against one comment's text only. Each repeat is over its own set: linear.
NOQA = re.compile(r"#\s*noqa(?::[ \t]*(?P<codes>[\w.\-]+(?:[ \t]*,[ \t]*[\w.\-]+)*))?", re.I)


@dataclass(frozen=True, slots=True)
class Comment:
    line: int  # 1-based
    column: int  # 0-based character offset of its `#`
    text: str  # from `#` to the end of the line, without the newline


@dataclass(frozen=True, slots=True)
class Comments:
    """One file's comments by line, and the lines whose end lies inside a string or a continuation."""

    by_line: dict[int, Comment] = field(default_factory=dict)
    open_lines: frozenset[int] = frozenset()
    known: int = 0  # the lines up to this one were tokenized; past it (a file that stops parsing) nothing is known
    moves: bool = True  # a line's noqa may sit where its statement's physical line ends (Python)

    def home(self, line: int) -> int | None:
        """The line whose comment counts for `line`: itself, or (Python) the line where the string or
        continuation it ends inside closes; None when unknown or when no comment can stand there."""
        while line in self.open_lines:
            if not self.moves:
                return None
            line += 1
        return line if line <= self.known else None

    def noqa(self, line: int) -> tuple[Comment, re.Match[str]] | None:
        home = self.home(line)
        comment = self.by_line.get(home) if home is not None else None
        if comment is None:
            return None
        match = NOQA.search(comment.text)
        return (comment, match) if match is not None else None


def language_of(path: str) -> str | None:
    """The comment syntax of a checked file: "python", "yaml", "shell", or None (JSON has no comments)."""
    lower = path.lower()
    if lower.endswith((".yaml", ".yml")):
        return "yaml"
    if lower.endswith(".sh"):
        return "shell"
    if lower.endswith(".json"):
        return None
    return "python"  # .py, .pyi, a notebook's code cells, and text checked as Python


def codes_of(match: re.Match[str]) -> list[str]:
    codes = match.group("codes")
    # str.split, not a regex around the comma: blanks-comma-blanks backtracks over a run of blanks
    return [code.strip(" \t") for code in codes.split(",")] if codes else []


@dataclass(frozen=True, slots=True)
class Text:
    """What the comment readers need of a file: its lines (1-based, without breaks), their count, and the
    whole text (YAML and shell are read whole; Python only around the line asked about)."""

    line: Callable[[int], str]
    count: int
    whole: Callable[[], str]

    @staticmethod
    def of(text: str) -> Text:
        lines = _lines(text)
        return Text(lambda n: lines[n - 1] if 0 < n <= len(lines) else "", len(lines), lambda: text)


def comments_at(text: Text, language: str, line: int, column: int) -> Comments:
    """The comments that matter for a finding at (line, column): those of its line, or of the line its
    statement's physical line ends on. Python is tokenized from the finding's own position for just as
    many lines as that takes (the finding is code, so no string or comment is open there): the cost of a
    noqa never grows with the file."""
    if language == "python":
        return _python_at(text, line, column)
    return scan(text.whole(), language)


def silenced(rule: str, line: int, comments: Comments) -> bool:
    """Whether the noqa comment of `line` silences `rule` (a bare `# noqa` silences every rule)."""
    from rootrank.check.options import matches

    found = comments.noqa(line)
    if found is None:
        return False
    codes = codes_of(found[1])
    return not codes or any(matches(rule, code) for code in codes)


def insertion(text: Text, language: str, line: int, column: int, rule: str) -> Edit | None:
    """The edit that silences `rule` for a finding at (line, column) (1-based; columns in characters),
    or None when one is not needed or not possible."""
    comments = comments_at(text, language, line, column)
    home = comments.home(line)
    if home is None:
        return None
    found = comments.noqa(line)
    if found is not None:
        comment, match = found
        codes = codes_of(match)
        if not codes or rule in codes:
            return None
        at = comment.column + match.end("codes") + 1
        return Edit(home, at, home, at, f", {rule}")
    source = text.line(home)
    if home in comments.by_line:  # after the line's own comment, as a second one
        end = len(source.rstrip())
        return Edit(home, end + 1, home, len(source) + 1, f"  # noqa: {rule}")
    code = source.rstrip()
    separator = "  " if code else ""
    return Edit(home, len(code) + 1, home, len(source) + 1, f"{separator}# noqa: {rule}")


# Opened before the finding's text so that closing brackets of an enclosing call and the indentation of
# the lines after it read as the inside of brackets, not as errors.
_OPEN = "(" * 64
_STRING_PARTS = ("STRING_START", "STRING_END")


def _python_at(text: Text, line: int, column: int) -> Comments:
    unknown = Comments(known=line - 1)
    if not 0 < line <= text.count:
        return unknown
    start = max(column, 1) - 1
    shift = len(_OPEN) - start  # tokenize's column on the first line minus the file's

    def lines() -> Iterator[str]:
        yield _OPEN + text.line(line)[start:] + "\n"
        for number in range(line + 1, text.count + 1):
            yield text.line(number) + "\n"

    feed = lines()
    home = line
    comment: Comment | None = None
    open_lines: set[int] = set()
    depth = 0  # 3.12+: f-strings arrive as START ... END with their parts between
    try:
        for token in tokenize.generate_tokens(lambda: next(feed, "")):
            first, last = token.start[0] + line - 1, token.end[0] + line - 1
            while first > home and depth == 0 and comment is None and _continued(text.line(home)):
                open_lines.add(home)
                home += 1
            if first > home and depth == 0:
                break
            name = tokenize.tok_name.get(token.type, "")
            if token.type == tokenize.COMMENT and first == home:
                where = token.start[1] - shift if token.start[0] == 1 else token.start[1]
                comment = Comment(home, where, token.string)
            elif (token.type == tokenize.STRING or name.endswith(_STRING_PARTS[1])) and last > home:
                open_lines.update(range(home, last))
                home = last
            if name.endswith(_STRING_PARTS[0]):
                depth += 1
            elif name.endswith(_STRING_PARTS[1]):
                depth -= 1
    except (tokenize.TokenError, SyntaxError) as error:
        # Our own brackets are never closed: "EOF in multi-line statement" at the end is expected. A
        # string still open at the end of the file leaves the line's end unknown.
        if depth or "string" in str(error.args[0] if error.args else "").lower():
            return unknown
    while comment is None and _continued(text.line(home)) and home <= text.count:  # continued at the end
        open_lines.add(home)
        home += 1
    return Comments({home: comment} if comment is not None else {}, frozenset(open_lines), min(home, text.count))


def _continued(source: str) -> bool:
    """Whether a line (with no comment, and not ending inside a string) ends in a backslash continuation."""
    return source.rstrip().endswith("\\")


_NEWLINE = re.compile(r"\r\n|\r|\n")


def _lines(text: str) -> list[str]:
    """Physical lines as tokenize and the Locator count them (not str.splitlines: a form feed is no break)."""
    lines = _NEWLINE.split(text)
    return lines[:-1] if lines and lines[-1] == "" else lines


@functools.lru_cache(maxsize=2)  # the file being checked (and the one before): each holds its text
def scan(text: str, language: str) -> Comments:
    """The comments of `text` read as `language` (see language_of)."""
    if language == "yaml":
        return _yaml(text)
    if language == "shell":
        return _shell(text)
    return _python(text)


# ---------------------------------------------------------------------- Python


def _python(text: str) -> Comments:
    by_line: dict[int, Comment] = {}
    open_lines: set[int] = set()
    lines = _lines(text)
    known = len(lines)
    openers: list[int] = []  # 3.12+: the line of each FSTRING_START whose FSTRING_END is still to come
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            name = tokenize.tok_name.get(token.type, "")
            if token.type == tokenize.COMMENT:
                by_line[token.start[0]] = Comment(token.start[0], token.start[1], token.string)
            elif token.type == tokenize.STRING and token.end[0] > token.start[0]:
                open_lines.update(range(token.start[0], token.end[0]))
            elif name.endswith("STRING_START"):
                openers.append(token.start[0])
            elif name.endswith("STRING_END") and openers:
                open_lines.update(range(openers.pop(), token.end[0]))
    except (tokenize.TokenError, SyntaxError) as error:
        # "EOF in multi-line statement" comes at the very end; an indentation error stops early.
        stop = error.args[1][0] if len(error.args) > 1 and isinstance(error.args[1], tuple) else None
        if isinstance(error, SyntaxError):
            stop = error.lineno
        known = min(known, stop) if isinstance(stop, int) else known
        if openers:
            open_lines.update(range(openers[0], known + 1))
    for number, source in enumerate(lines, 1):
        if number not in open_lines and number not in by_line and source.rstrip().endswith("\\"):
            open_lines.add(number)  # a continuation: a comment there would end the statement
    return Comments(by_line, frozenset(open_lines), known)


# ---------------------------------------------------------------------- YAML


def _yaml(text: str) -> Comments:
    import yaml

    spans: dict[int, list[tuple[int, float]]] = {}  # line -> [start, end) columns covered by scalars
    open_lines: set[int] = set()
    lines = _lines(text)
    known = len(lines)
    try:
        for token in yaml.scan(text, Loader=yaml.SafeLoader):
            if not isinstance(token, yaml.ScalarToken):
                continue
            start, end = token.start_mark, token.end_mark
            first, last = start.line + 1, end.line + 1
            if first == last:
                spans.setdefault(first, []).append((start.column, end.column))
                continue
            spans.setdefault(first, []).append((start.column, float("inf")))
            for middle in range(first + 1, last):
                spans.setdefault(middle, []).append((0, float("inf")))
            spans.setdefault(last, []).append((0, end.column))
            open_lines.update(range(first, last))  # their ends are inside the scalar
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        known = min(known, mark.line) if mark is not None else 0
    by_line: dict[int, Comment] = {}
    for number, source in enumerate(lines[:known], 1):
        for hash_at in _hashes(source):
            if (hash_at == 0 or source[hash_at - 1] in " \t") and not any(
                    a <= hash_at < b for a, b in spans.get(number, ())):
                by_line[number] = Comment(number, hash_at, source[hash_at:])
                break
    return Comments(by_line, frozenset(open_lines), known, moves=False)


def _hashes(source: str) -> Iterator[int]:
    at = source.find("#")
    while at >= 0:
        yield at
        at = source.find("#", at + 1)


# ---------------------------------------------------------------------- shell


def _shell(text: str) -> Comments:
    """A launch script's comments: `#` starting a word outside quotes. Lines ending inside quotes or with
    a backslash continue the command."""
    by_line: dict[int, Comment] = {}
    open_lines: set[int] = set()
    lines = _lines(text)
    quote = ""
    for number, source in enumerate(lines, 1):
        position = 0
        while position < len(source):
            char = source[position]
            if quote:
                if char == "\\" and quote == '"':
                    position += 1
                elif char == quote:
                    quote = ""
            elif char in "'\"":
                quote = char
            elif char == "\\":
                position += 1
            elif char == "#" and (position == 0 or source[position - 1] in " \t;&|()"):
                by_line[number] = Comment(number, position, source[position:])
                break
            position += 1
        if quote or (number not in by_line and source.endswith("\\") and not _escaped_end(source)):
            open_lines.add(number)
    return Comments(by_line, frozenset(open_lines), len(lines), moves=False)


def _escaped_end(source: str) -> bool:
    """Whether the line's final backslash is itself escaped (`\\\\`): then it does not continue."""
    run = len(source) - len(source.rstrip("\\"))
    return run % 2 == 0
