"""Source text bookkeeping: the cheap pre-filter, which lines matter, and byte/character positions.

`ast` reports columns as UTF-8 byte offsets; rootrank positions are 1-based character columns. The
`Locator` converts between the two and turns (line, column) pairs into string offsets for edits.
"""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Iterable

# Every check is about activation checkpointing, so a file that never says so is skipped before parsing
# (torchfix's "avoid expensive parsing" trick). `recompute` covers Megatron's spelling.
MENTIONS_CHECKPOINTING = re.compile(r"checkpoint|recompute")

# Identifiers that make a statement worth walking. Statements that mention none of these (and none of
# the local aliases bound to them) are visited for structure only; their expressions are not walked.
KEYWORDS = (
    "checkpoint", "recompute", "compile", "no_grad", "inference_mode", "set_grad_enabled",
    "DistributedDataParallel", "DDP", "find_unused_parameters", "static_graph", "autograd", "backward",
    "requires_grad", "peft", "lora", "LoRA", "enable_input_require_grads", "ModuleList", "Sequential",
    "fully_shard", "FSDP", "FullyShardedDataParallel", "TrainingArguments", "Config", "use_cache",
    "partial", "from_pretrained", "parameters", "generate", "Embedding", "embed", "wte",
    "ReLU", "GELU", "SiLU", "Tanh", "Sigmoid", "Dropout", "Norm", "Identity", "relu", "gelu", "silu",
    "dropout", "norm", "sigmoid", "tanh", "softmax", "Softmax", "Mish", "mish", "act",
)
_KEYWORD_RE = re.compile("|".join(sorted(KEYWORDS, key=len, reverse=True)))
_BOUND_NAME = re.compile(r"\bas\s+([A-Za-z_]\w*)|^[ \t]*([A-Za-z_]\w*)[ \t]*(?::[^=\n]*)?=(?!=)", re.M)
_NEWLINE = re.compile(r"\r\n|\r|\n")


class Locator:
    """Line starts of one source text, for position conversion in both directions."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.starts = [0, *(m.end() for m in _NEWLINE.finditer(source))]

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

    def __init__(self, locator: Locator) -> None:
        lines = set(locator.lines_matching(_KEYWORD_RE))
        aliases: set[str] = set()
        # Two rounds of "names bound on an interesting line are interesting": covers
        # `from torch.utils.checkpoint import checkpoint as ck` and `ckpt = partial(ck, ...)`.
        for _ in range(2):
            new = set()
            for line in lines:
                for m in _BOUND_NAME.finditer(locator.line_text(line)):
                    name = m.group(1) or m.group(2)
                    if name and name not in aliases:
                        new.add(name)
            if not new:
                break
            aliases |= new
            alias_re = re.compile(r"\b(?:" + "|".join(map(re.escape, sorted(aliases))) + r")\b")
            lines |= set(locator.lines_matching(alias_re))
        self.lines = sorted(lines)

    def spans(self, first: int, last: int) -> bool:
        i = bisect.bisect_left(self.lines, first)
        return i < len(self.lines) and self.lines[i] <= last

    def node(self, node: ast.AST) -> bool:
        first = getattr(node, "lineno", 0)
        return self.spans(first, getattr(node, "end_lineno", None) or first)

    def any(self, nodes: Iterable[ast.AST]) -> bool:
        return any(self.node(n) for n in nodes)
