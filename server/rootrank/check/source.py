"""Source text bookkeeping: the cheap pre-filter, which lines matter, byte/character positions, and
whether a file is test code.

`ast` reports columns as UTF-8 byte offsets; rootrank positions are 1-based character columns. The
`Locator` converts between the two and turns (line, column) pairs into string offsets for edits.
"""

from __future__ import annotations

import ast
import bisect
import functools
import itertools
import re
from collections.abc import Callable, Iterable, Iterator

# Every check is about activation checkpointing, so a file that never says so is skipped before parsing
# (torchfix's "avoid expensive parsing" trick). `recompute` covers Megatron's spelling.
MENTIONS_CHECKPOINTING = re.compile(r"checkpoint|recompute")

# Names that make a statement worth walking. Statements that mention none of these (and none of the
# local aliases bound to them) are visited for structure only; their expressions are not walked.
# SUBSTRINGS may sit inside longer identifiers (`gradient_checkpointing_enable`); WORDS must stand alone,
# because short names like `relu` or `DDP` would otherwise match half of a training file.
SUBSTRINGS = (
    "checkpoint", "recompute", "compile", "no_grad", "inference_mode", "set_grad_enabled", "enable_grad",
    "DistributedDataParallel", "find_unused_parameters", "static_graph", "autograd", "backward",
    "requires_grad", "require_grads", "peft", "lora", "LoRA", "ModuleList", "Sequential", "fully_shard", "FullyShardedDataParallel",
    "TrainingArguments", "Config", "use_cache", "partial", "from_pretrained", "from_config", "named_parameters", "register_forward_hook",
    "dropout", "add_adapter", "load_adapter",
)
WORDS = (
    "DDP", "FSDP", "generate", "eval", "parameters", "Embedding", "embed", "wte", "ReLU", "ReLU6", "GELU",
    "SiLU", "Mish", "Tanh", "Sigmoid", "Hardswish", "Hardsigmoid", "LeakyReLU", "ELU", "SELU", "Softplus",
    "Softmax", "LogSoftmax", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "Identity",
    "LayerNorm", "RMSNorm", "GroupNorm", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "Flatten",
)
_KEYWORD_RE = re.compile("|".join(sorted(SUBSTRINGS, key=len, reverse=True))
                         + r"|\b(?:" + "|".join(sorted(WORDS, key=len, reverse=True)) + r")\b")
# Names that become aliases of something interesting: `import x as NAME`, `NAME = partial(...)` and plain
# `NAME = some.dotted.name`. Ordinary results (`x = checkpoint(block, x)`) are not aliases.
_BOUND_NAME = re.compile(r"\bas\s+([A-Za-z_]\w*)"
                         r"|^[ \t]*([A-Za-z_]\w*)[ \t]*=[ \t]*(?:(?:functools\.)?partial\(|[\w.]+[ \t]*(?:#.*)?$)", re.M)
_NEWLINE = re.compile(r"\r\n|\r|\n")


class Locator:
    """Line starts of one source text, for position conversion in both directions."""

    def __init__(self, source: str) -> None:
        self.source = source
        if "\r" in source:
            self.starts = [0, *(m.end() for m in _NEWLINE.finditer(source))]
        else:  # the common case, in C: each line's start is the running sum of the lengths before it
            self.starts = [0, *itertools.accumulate(map((1).__add__, map(len, source.split("\n")[:-1])))]

    def line_text(self, line: int) -> str:
        if line < 1 or line > len(self.starts):
            return ""
        start = self.starts[line - 1]
        end = self.starts[line] if line < len(self.starts) else len(self.source)
        return self.source[start:end].rstrip("\r\n")

    def column(self, line: int, byte_col: int) -> int:
        """1-based character column of an `ast` byte offset on `line`."""
        text = self.line_text(line)
        if text.isascii():
            return byte_col + 1
        return len(text.encode("utf-8")[:byte_col].decode("utf-8", errors="replace")) + 1

    def offset(self, line: int, column: int) -> int:
        """String offset of a 1-based (line, character column) position, clamped to the text."""
        if line > len(self.starts):
            return len(self.source)
        start = self.starts[max(line, 1) - 1]
        return min(start + max(column, 1) - 1, len(self.source))

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset)

    def lines_matching(self, pattern: re.Pattern[str]) -> list[int]:
        return sorted({self.line_of(m.start()) for m in pattern.finditer(self.source)})


class Interest:
    """Which lines mention checkpoint-related names (or names bound to them), so walks can skip the rest."""

    def __init__(self, lines: Iterable[int]) -> None:
        self.lines = sorted(lines)

    def spans(self, first: int, last: int) -> bool:
        i = bisect.bisect_left(self.lines, first)
        return i < len(self.lines) and self.lines[i] <= last

    def node(self, node: ast.AST) -> bool:
        first = getattr(node, "lineno", 0)
        return self.spans(first, getattr(node, "end_lineno", None) or first)


@functools.lru_cache(maxsize=4096)
def keyword_lines(text: str) -> tuple[tuple[int, ...], frozenset[str]]:
    """Lines of `text` (1-based) that mention a keyword, and the names bound on those lines."""
    return _scan(text, _KEYWORD_RE)


@functools.lru_cache(maxsize=4096)
def alias_lines(text: str, aliases: frozenset[str]) -> tuple[tuple[int, ...], frozenset[str]]:
    """Lines of `text` that mention one of `aliases` (local names bound to checkpoint-related things)."""
    if not aliases:
        return (), frozenset()
    return _scan(text, _alias_pattern(aliases))


@functools.lru_cache(maxsize=64)
def _alias_pattern(aliases: frozenset[str]) -> re.Pattern[str]:
    return re.compile(r"\b(?:" + "|".join(map(re.escape, sorted(aliases))) + r")\b")


def _scan(text: str, pattern: re.Pattern[str]) -> tuple[tuple[int, ...], frozenset[str]]:
    locator = Locator(text)
    # One search per line is cheaper than visiting every match when a line mentions several names.
    lines = [number for number, line in enumerate(_NEWLINE.split(text), 1) if pattern.search(line)]
    bound = {m.group(1) or m.group(2) for line in lines for m in _BOUND_NAME.finditer(locator.line_text(line))}
    # `from torch.autograd import grad` binds `grad`, also across the lines of a parenthesised import.
    for match in _FROM_IMPORT.finditer(text):
        if pattern.search(match.group(0)):
            for part in match.group(2).strip("()").split(","):
                words = part.split()
                if words:
                    bound.add(words[-1])
    return tuple(lines), frozenset(bound)


# `[^()]*`, not `[^)]*`: an unclosed `from x import (` would scan to the end of the file for a `)` that never
# comes, once per such line (quadratic); it now stops at the next `(`, which begins the next import.
_FROM_IMPORT = re.compile(r"^[ \t]*from[ \t]+([\w.]+)[ \t]+import[ \t]+(\([^()]*\)|[^\n]*)", re.M)


def aliases_of(texts: Iterable[str], cancelled: Callable[[], bool] | None = None) -> frozenset[str]:
    """Names bound on interesting lines, over a file's chunks: two rounds cover
    `from torch.utils.checkpoint import checkpoint as ck` and then `ckpt = partial(ck, ...)`.
    `cancelled` is polled as it goes (see check/bounds.py)."""
    texts = list(texts)
    aliases = frozenset().union(*(keyword_lines(t)[1] for t in _polled(texts, cancelled)))
    more = frozenset().union(*(alias_lines(t, aliases)[1] for t in _polled(texts, cancelled)))
    return aliases | more


def _polled(texts: list[str], cancelled: Callable[[], bool] | None) -> Iterator[str]:
    from rootrank.check.bounds import stop_if

    for number, text in enumerate(texts):
        if not number % 64:
            stop_if(cancelled)
        yield text


def interest_of(text: str, first_line: int, aliases: frozenset[str]) -> Interest:
    offset = first_line - 1
    lines = set(keyword_lines(text)[0]) | set(alias_lines(text, aliases)[0])
    return Interest(line + offset for line in lines)


def is_test_code(path: str) -> bool:
    """A pytest test module: `test_*.py` or `*_test.py` (pytest's default `python_files`). By the file's own
    name only: a folder called `tests` may hold the whole project when the path is absolute (the editor)."""
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))
