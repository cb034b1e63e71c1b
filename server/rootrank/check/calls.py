"""Finds the checkpoint-related calls of a Python file and what the file uses around them (for hover).

A light, import-aware reading of the syntax tree: `import torch.utils.checkpoint as cp` makes
`cp.checkpoint` a checkpoint call, `from torch.nn.parallel import DistributedDataParallel as DDP` makes
`DDP(...)` a DDP wrap. Nothing is imported or run.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import re
from collections import OrderedDict
from dataclasses import dataclass, field

from rootrank.textlines import split_lines

# canonical name -> what it is; every call whose resolved name ends with one of these is a target
TARGETS = {
    "checkpoint": "torch.utils.checkpoint.checkpoint",
    "checkpoint_sequential": "torch.utils.checkpoint.checkpoint_sequential",
    "gradient_checkpointing_enable": "transformers PreTrainedModel.gradient_checkpointing_enable",
    "checkpoint_wrapper": "torch.distributed.algorithms._checkpoint.checkpoint_wrapper.checkpoint_wrapper",
    "apply_activation_checkpointing": "torch.distributed.algorithms._checkpoint.checkpoint_wrapper"
                                      ".apply_activation_checkpointing",
    "compile": "torch.compile",
    "DistributedDataParallel": "torch.nn.parallel.DistributedDataParallel",
    "fully_shard": "torch.distributed.fsdp.fully_shard (FSDP2)",
    "FullyShardedDataParallel": "torch.distributed.fsdp.FullyShardedDataParallel (FSDP1)",
}
CHECKPOINTING = ("checkpoint", "checkpoint_sequential", "gradient_checkpointing_enable", "checkpoint_wrapper",
                 "apply_activation_checkpointing")


@dataclass(frozen=True)
class Call:
    name: str  # the canonical name (a key of TARGETS)
    written: str  # the callee as written, e.g. "cp.checkpoint"
    line: int  # 1-based lines; columns are 0-based code points
    column: int
    end_line: int
    end_column: int
    keywords: dict[str, str]  # keyword -> source text of its value
    args: tuple[str, ...]  # positional arguments' source text
    has_star_kwargs: bool
    loops: tuple[str, ...]  # enclosing loops, innermost last, e.g. "for block in self.blocks"
    conditions: tuple[str, ...]  # enclosing `if` tests
    function: str  # the enclosing def, or ""
    decorator: bool = False  # `@torch.compile` rather than a call

    def contains(self, line: int, column: int) -> bool:
        return (self.line, self.column) <= (line, column) <= (self.end_line, self.end_column)


@dataclass
class FileFacts:
    calls: list[Call] = field(default_factory=list)
    features: dict[str, int] = field(default_factory=dict)  # feature -> first line it appears on

    def checkpoint_calls(self) -> list[Call]:
        return [c for c in self.calls if c.name in CHECKPOINTING]

    def at(self, line: int, column: int) -> Call | None:
        """The innermost target call containing the 1-based line and 0-based code-point column."""
        inside = [c for c in self.calls if c.contains(line, column)]
        return max(inside, key=lambda c: (c.line, c.column)) if inside else None


_FEATURE_NAMES = {
    "compile": ("torch.compile",),
    "DDP": ("DistributedDataParallel",),
    "FSDP": ("fully_shard", "FullyShardedDataParallel"),
    "PEFT": ("peft", "get_peft_model", "LoraConfig", "PeftModel", "prepare_model_for_kbit_training"),
    "DeepSpeed": ("deepspeed",),
}


class _Reader(ast.NodeVisitor):
    def __init__(self, source: str) -> None:
        self.lines = split_lines(source)
        self._encoded: dict[int, bytes] = {}
        self.aliases: dict[str, str] = {}
        self.facts = FileFacts()
        self.loops: list[str] = []
        self.conditions: list[str] = []
        self.functions: list[str] = []

    # -- positions ----------------------------------------------------------
    def _bytes(self, line: int) -> bytes:
        """The 1-based line as UTF-8 (ast columns are byte offsets), encoded once per line."""
        cached = self._encoded.get(line)
        if cached is None:
            text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
            cached = self._encoded[line] = text.encode("utf-8")
        return cached

    def _col(self, line: int, byte_col: int) -> int:
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        return byte_col if text.isascii() else len(self._bytes(line)[:byte_col].decode("utf-8", "replace"))

    def _src(self, node: ast.AST, limit: int = 80) -> str:
        """The node's source as written (one line, blanks collapsed), cut at `limit` characters."""
        text = self._segment(node, 2 * limit)
        if text is None:
            try:
                text = ast.unparse(node)
            except Exception:
                return "…"
        text = " ".join(text.split())
        return text if len(text) <= limit else text[: limit - 1] + "…"

    def _segment(self, node: ast.AST, limit: int) -> str | None:
        """Like ast.get_source_segment, but cut after about `limit` characters and without re-splitting
        the source (a huge node costs no more than a small one)."""
        first, last = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
        start, end = getattr(node, "col_offset", None), getattr(node, "end_col_offset", None)
        if first is None or last is None or start is None or end is None or last > len(self.lines):
            return None
        if first == last:
            return self._bytes(first)[start:min(end, start + 4 * limit)].decode("utf-8", "replace")
        parts = [self._bytes(first)[start:start + 4 * limit].decode("utf-8", "replace")]
        size = len(parts[0])
        for line in range(first + 1, last):
            if size > limit:
                return "\n".join(parts)
            parts.append(self.lines[line - 1])
            size += len(parts[-1])
        if size <= limit:
            parts.append(self._bytes(last)[:end].decode("utf-8", "replace"))
        return "\n".join(parts)

    def _feature(self, name: str, line: int) -> None:
        self.facts.features.setdefault(name, line)

    # -- names ----------------------------------------------------------------
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.aliases[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else \
                alias.name.split(".")[0]
            self._note_module(alias.name, node.lineno)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        self._note_module(module, node.lineno)
        for alias in node.names:
            self.aliases[alias.asname or alias.name] = f"{module}.{alias.name}" if module else alias.name
            self._note_name(alias.name, node.lineno)

    def _note_module(self, module: str, line: int) -> None:
        top = module.split(".")[0]
        if top == "peft":
            self._feature("PEFT", line)
        elif top == "deepspeed":
            self._feature("DeepSpeed", line)
        if "fsdp" in module.split("."):
            self._feature("FSDP", line)

    def _note_name(self, name: str, line: int) -> None:
        for feature, names in _FEATURE_NAMES.items():
            if name in names:
                self._feature(feature, line)

    def resolve(self, node: ast.AST) -> str | None:
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name):
            parts.append(self.aliases.get(node.id, node.id))
        elif isinstance(node, ast.Call):
            parts.append("<call>")
        else:
            return None
        return ".".join(reversed(parts))

    # -- structure ------------------------------------------------------------
    def _visit_loop(self, node: ast.For | ast.AsyncFor | ast.While, label: str) -> None:
        self.loops.append(label)
        for child in node.body:
            self.visit(child)
        self.loops.pop()
        for child in node.orelse:
            self.visit(child)

    def visit_For(self, node: ast.For) -> None:
        self.visit(node.iter)
        self._visit_loop(node, f"for {self._src(node.target, 30)} in {self._src(node.iter, 50)}")

    def visit_AsyncFor(self, node: ast.AsyncFor) -> None:
        self.visit(node.iter)
        self._visit_loop(node, f"for {self._src(node.target, 30)} in {self._src(node.iter, 50)}")

    def visit_While(self, node: ast.While) -> None:
        self.visit(node.test)
        self._visit_loop(node, f"while {self._src(node.test, 50)}")

    def visit_If(self, node: ast.If) -> None:
        self.visit(node.test)
        self.conditions.append(self._src(node.test, 60))
        for child in node.body:
            self.visit(child)
        self.conditions[-1] = f"not ({self.conditions[-1]})"
        for child in node.orelse:
            self.visit(child)
        self.conditions.pop()

    def _visit_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for decorator in node.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            if self.resolve(target) == "torch.compile":
                self._record(decorator, "compile", target, decorator=True)
            self.visit(decorator)
        self.functions.append(node.name)
        saved_loops, saved_conditions = self.loops, self.conditions
        self.loops, self.conditions = [], []
        for child in node.body:
            self.visit(child)
        self.loops, self.conditions = saved_loops, saved_conditions
        self.functions.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._visit_function(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._visit_function(node)

    def visit_Name(self, node: ast.Name) -> None:
        resolved = self.aliases.get(node.id, node.id)
        self._note_name(resolved.rsplit(".", 1)[-1], node.lineno)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self._note_name(node.attr, node.lineno)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        resolved = self.resolve(node.func)
        if resolved is not None:
            name = self._target(resolved, node.func)
            if name is not None:
                self._record(node, name, node.func)
            if resolved.rsplit(".", 1)[-1] in ("get_peft_model", "prepare_model_for_kbit_training"):
                self._feature("PEFT", node.lineno)
        self.generic_visit(node)

    def _target(self, resolved: str, func: ast.AST) -> str | None:
        last = resolved.rsplit(".", 1)[-1]
        if last not in TARGETS:
            return None
        if last == "compile":
            return "compile" if resolved == "torch.compile" else None
        if last == "checkpoint":
            # `checkpoint` is a common method name (`trainer.checkpoint()`): require torch, DeepSpeed,
            # an import, or a module alias whose path says checkpoint.
            head = resolved.split(".")[0]
            if isinstance(func, ast.Name):
                return "checkpoint" if func.id in self.aliases else None
            return "checkpoint" if head in ("torch", "deepspeed", "megatron", "fairscale") or \
                "checkpoint" in resolved.rsplit(".", 1)[0] else None
        return last

    def _record(self, node: ast.AST, name: str, func: ast.AST, decorator: bool = False) -> None:
        line, end_line = node.lineno, node.end_lineno or node.lineno  # type: ignore[attr-defined]
        column = self._col(line, node.col_offset)  # type: ignore[attr-defined]
        end_column = self._col(end_line, node.end_col_offset or 0)  # type: ignore[attr-defined]
        keywords: dict[str, str] = {}
        args: tuple[str, ...] = ()
        star = False
        if isinstance(node, ast.Call):
            for keyword in node.keywords:
                if keyword.arg is None:
                    star = True
                else:
                    keywords[keyword.arg] = self._src(keyword.value, 120)
            args = tuple(self._src(a, 60) for a in node.args)
        self.facts.calls.append(Call(
            name=name, written=self._src(func, 60), line=line, column=column, end_line=end_line,
            end_column=end_column, keywords=keywords, args=args, has_star_kwargs=star,
            loops=tuple(self.loops), conditions=tuple(self.conditions),
            function=self.functions[-1] if self.functions else "", decorator=decorator,
        ))
        feature = {"compile": "compile", "DistributedDataParallel": "DDP", "fully_shard": "FSDP",
                   "FullyShardedDataParallel": "FSDP"}.get(name)
        if feature:
            self._feature(feature, line)


# Top-level `def`/`class`/decorator lines: the file is cut before each (decorators stay with their def), and
# each piece is parsed and read once per distinct text, so a keystroke re-reads one piece of a big file.
_TOP_LEVEL = re.compile(r"^(?:(@)|(?:async[ \t]+)?def[ \t]|class[ \t])", re.MULTILINE)
# Keyed by piece text; trees are not kept (they are large), only what was read from them.
_CACHE_SIZE = 2048
_ALIASES: OrderedDict[str, dict[str, str] | None] = OrderedDict()  # None: the piece does not parse
_PIECES: OrderedDict[tuple[str, int], FileFacts] = OrderedDict()


def split_pieces(source: str) -> list[tuple[int, str]]:
    """(first line, text) of each top-level piece; a cut inside a string only costs a whole-file parse."""
    if "\r" in source.replace("\r\n", ""):
        return [(1, source)]  # lone CR line ends: keep line counting simple
    starts, decorated = [0], False
    for match in _TOP_LEVEL.finditer(source):
        if not decorated and match.start() > 0:
            starts.append(match.start())
        decorated = match.group(1) is not None
    pieces, line = [], 1
    for begin, end in zip(starts, [*starts[1:], len(source)], strict=True):
        pieces.append((line, source[begin:end]))
        line += source.count("\n", begin, end)
    return pieces


def _remember(cache: OrderedDict, key: object, value: object) -> None:
    cache[key] = value
    if len(cache) > _CACHE_SIZE:
        cache.popitem(last=False)


def _parse(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _aliases(text: str, trees: dict[str, ast.Module]) -> dict[str, str] | None:
    """The import aliases a piece defines (None when it does not parse); its tree goes into `trees`."""
    if text not in _ALIASES:
        tree = _parse(text)
        aliases = None
        if tree is not None:
            trees[text] = tree
            reader = _Reader(text)
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    reader.visit_Import(node)
                elif isinstance(node, ast.ImportFrom):
                    reader.visit_ImportFrom(node)
            aliases = reader.aliases
        _remember(_ALIASES, text, aliases)
    return _ALIASES[text]


def _read_piece(text: str, trees: dict[str, ast.Module], aliases: dict[str, str], key: int) -> FileFacts:
    if (text, key) not in _PIECES:
        reader = _Reader(text)
        reader.aliases = dict(aliases)
        tree = trees.get(text) or _parse(text)
        # A very deep expression (Python compiles ~1000 levels) ends the walk: keep what was read before it.
        with contextlib.suppress(RecursionError):
            if tree is not None:
                reader.visit(tree)
        _remember(_PIECES, (text, key), reader.facts)
    return _PIECES[(text, key)]


def _read_whole(source: str) -> FileFacts | None:
    """One parse of the whole file, not cached (its text would be a new key on every keystroke)."""
    tree = _parse(source)
    if tree is None:
        return None
    reader = _Reader(source)
    with contextlib.suppress(RecursionError):
        reader.visit(tree)
    reader.facts.calls.sort(key=lambda c: (c.line, c.column))
    return reader.facts


def read_file(source: str) -> FileFacts | None:
    """The facts of a Python source, or None when it does not parse."""
    pieces = split_pieces(source)
    trees: dict[str, ast.Module] = {}
    found = [_aliases(text, trees) for _, text in pieces]
    if any(a is None for a in found):  # a cut inside a string or brackets, or a real syntax error
        return None if len(pieces) == 1 else _read_whole(source)
    aliases: dict[str, str] = {}
    for piece_aliases in found:
        aliases.update(piece_aliases or {})
    key = hash(frozenset(aliases.items()))
    facts = FileFacts()
    for first, text in pieces:
        piece = _read_piece(text, trees, aliases, key)
        shift = first - 1
        facts.calls.extend(
            dataclasses.replace(c, line=c.line + shift, end_line=c.end_line + shift) if shift else c
            for c in piece.calls
        )
        for feature, line in piece.features.items():
            facts.features.setdefault(feature, line + shift)
    facts.calls.sort(key=lambda c: (c.line, c.column))
    return facts
