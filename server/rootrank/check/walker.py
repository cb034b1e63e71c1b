"""The single pass over a parsed file, and rule dispatch with isolation.

`collect` cuts the module into top-level chunks (before each `def`/`class`), parses and walks each one
once and caches what it found, so a keystroke re-parses only the chunk it touched. The walk visits every
statement, keeping the context (functions, class, `with` items, loops, branches) in a `Frame`, and walks
the expressions only of statements that mention checkpoint-related names. `run_rules` then hands the
merged `Semantic` to each selected rule; a rule that raises is logged and skipped, the others still run.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from rootrank.check.bounds import Cancelled, stop_if
from rootrank.check.fixes import judge_fixes
from rootrank.check.names import ImportTable
from rootrank.check.registry import RULES, Violation
from rootrank.check.semantic import AssignSite, CallSite, Frame, FunctionNode, Semantic
from rootrank.check.source import Interest, Locator, aliases_of, interest_of
from rootrank.model import Finding, Fix, Severity

LOG = logging.getLogger(__name__)

_SIMPLE_ASSIGN = (ast.Assign, ast.AnnAssign)


@dataclass
class Facts:
    """What the walk found in one stretch of source; `merge` joins the stretches of a file in order."""

    names: ImportTable = field(default_factory=ImportTable)
    constants: dict[str, ast.expr] = field(default_factory=dict)
    ambiguous: set[str] = field(default_factory=set)
    functions: list[tuple[FunctionNode, Frame]] = field(default_factory=list)
    classes: list[ast.ClassDef] = field(default_factory=list)
    calls: list[CallSite] = field(default_factory=list)
    assigns: list[AssignSite] = field(default_factory=list)


def collect(source: str, path: str, locator: Locator, versions: Mapping[str, str] | None = None,
            cancelled: Cancelled | None = None) -> Semantic:
    """Parse and walk `source`, top-level chunk by chunk (cached), else as a whole.

    Raises SyntaxError (or RecursionError/ValueError/MemoryError from the parser) when the file does
    not parse.
    """
    semantic = Semantic(path=path, source=source, locator=locator, versions=dict(versions or {}))
    chunks = split_chunks(source)
    aliases = aliases_of((text for _, text in chunks), cancelled)
    parts = []
    for number, (first, text) in enumerate(chunks):
        if not number % 64:
            stop_if(cancelled)
        parts.append(_chunk_facts(text, first, aliases))
    if any(part is None for part in parts):
        # A chunk that does not parse alone: either the file is broken (the whole parse says where),
        # or the split cut through a string or brackets, and the whole parse is the truth.
        tree = ast.parse(source, filename=path)
        parts = [walk(tree, interest_of(source, 1, aliases_of([source])))]
    for part in parts:
        assert part is not None
        _merge(semantic, part)
    return semantic


def walk(tree: ast.Module, interest: Interest) -> Facts:
    facts = Facts()
    _Collector(facts, interest).body(tree.body, Frame(), module=True)
    return facts


# Blank lines a chunk may be given in front of it, per line of its own and in any case (see _chunk_facts).
_PREFIX_LINES_PER_LINE = 8
_PREFIX_LINES_FREE = 200


@functools.lru_cache(maxsize=2048)
def _chunk_facts(text: str, first_line: int, aliases: frozenset[str]) -> Facts | None:
    """The facts of one top-level chunk; cached, so a keystroke only re-parses the chunk it changed."""
    try:
        # Blank lines in front give the right line numbers straight from the parser: the tokenizer skips
        # them far faster than `ast.increment_lineno` can renumber a tree. But their cost grows with the
        # chunk's place in the file (quadratic over a file of many small definitions), so past a budget
        # proportional to the chunk's own size the tree is renumbered instead: linear either way.
        if first_line - 1 <= _PREFIX_LINES_PER_LINE * text.count("\n") + _PREFIX_LINES_FREE:
            tree = ast.parse("\n" * (first_line - 1) + text)
        else:
            tree = ast.increment_lineno(ast.parse(text), first_line - 1)
    except (SyntaxError, RecursionError, ValueError, MemoryError):
        return None
    return walk(tree, interest_of(text, first_line, aliases))


def _merge(semantic: Semantic, facts: Facts) -> None:
    semantic.names.bindings.update(facts.names.bindings)
    for name, value in facts.constants.items():
        if name in semantic.constants:
            semantic.ambiguous.add(name)
        semantic.constants[name] = value
    semantic.ambiguous |= facts.ambiguous
    semantic.functions.extend(facts.functions)
    for node in facts.classes:
        semantic.classes.setdefault(node.name, node)
    semantic.calls.extend(facts.calls)
    semantic.assigns.extend(facts.assigns)


_LONE_CR = re.compile(r"\r(?!\n)")
_TOP_LEVEL = re.compile(r"^(?:(@)|(?:async[ \t]+def|def|class)\b)", re.M)


def split_chunks(source: str) -> list[tuple[int, str]]:
    """Cut a module before each top-level `def`/`class` (with its decorators): (first line, text) pairs.

    A cut inside a string or brackets yields a chunk that does not parse, and `collect` then falls
    back to parsing the whole file, so a wrong cut costs time, never correctness.
    """
    if _LONE_CR.search(source):
        return [(1, source)]  # old Mac line endings: keep line counting simple
    starts = [0]
    decorated = False
    for match in _TOP_LEVEL.finditer(source):
        if not decorated and match.start() > 0:
            starts.append(match.start())
        decorated = match.group(1) is not None
    chunks = []
    line = 1
    for begin, end in zip(starts, [*starts[1:], len(source)], strict=True):
        chunks.append((line, source[begin:end]))
        line += source.count("\n", begin, end)
    return chunks


class _Collector:
    def __init__(self, facts: Facts, interest: Interest) -> None:
        self.semantic = facts
        self.interest = interest

    def body(self, statements: Sequence[ast.stmt], frame: Frame, module: bool = False) -> None:
        for statement in statements:
            self.statement(statement, frame, module)

    def statement(self, node: ast.stmt, frame: Frame, module: bool) -> None:
        semantic = self.semantic
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            semantic.names.add(node)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.expressions([*node.decorator_list, *node.args.defaults, *node.args.kw_defaults], frame)
            semantic.functions.append((node, frame))
            # A nested body runs when called, not where it is defined: loops, branches and `with` reset.
            self.body(node.body, Frame(functions=(*frame.functions, node), class_=frame.class_))
        elif isinstance(node, ast.ClassDef):
            semantic.classes.append(node)
            self.body(node.body, Frame(class_=node))
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            self.expressions([node.target, node.iter], frame)
            self.body(node.body, dataclasses.replace(frame, loops=(*frame.loops, node)))
            self.body(node.orelse, frame)
        elif isinstance(node, ast.While):
            self.expressions([node.test], frame)
            self.body(node.body, dataclasses.replace(frame, loops=(*frame.loops, node)))
            self.body(node.orelse, frame)
        elif isinstance(node, ast.If):
            self.expressions([node.test], frame)
            depth = len(frame.loops)
            self.body(node.body, dataclasses.replace(frame, branches=(*frame.branches, (node, False, depth))))
            self.body(node.orelse, dataclasses.replace(frame, branches=(*frame.branches, (node, True, depth))))
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            items = [item.context_expr for item in node.items]
            self.expressions(items, frame)
            self.body(node.body, dataclasses.replace(frame, withs=(*frame.withs, *items)))
        elif isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
            self.body(node.body, frame)  # type: ignore[attr-defined]
            for handler in node.handlers:  # type: ignore[attr-defined]
                self.body(handler.body, frame)
            self.body(node.orelse, frame)  # type: ignore[attr-defined]
            self.body(node.finalbody, frame)  # type: ignore[attr-defined]
        elif isinstance(node, ast.Match):
            self.expressions([node.subject], frame)
            for case in node.cases:
                self.body(case.body, frame)
        else:
            if module and isinstance(node, _SIMPLE_ASSIGN):
                self.constant(node)
            assignment = isinstance(node, ast.Assign) or (isinstance(node, ast.AnnAssign) and node.value is not None)
            if self.interest.node(node):
                self.expressions([node], frame)
            elif assignment and isinstance(value := getattr(node, "value", None), ast.Call) \
                    and isinstance(value.func, ast.Name):
                self.expressions([value], frame, everything=True)
            else:
                return
            # `model = Model()` matters when a later line compiles or wraps `model`, so constructor
            # assignments are kept even on lines that mention nothing of interest.
            if assignment:
                targets = tuple(node.targets) if isinstance(node, ast.Assign) else (node.target,)  # type: ignore[attr-defined]
                semantic.assigns.append(AssignSite(targets, node.value, frame))  # type: ignore[attr-defined]

    def expressions(self, nodes: Iterable[ast.AST | None], frame: Frame, everything: bool = False) -> None:
        calls = self.semantic.calls
        for root in nodes:
            if root is None or not (everything or self.interest.node(root)):
                continue
            for node in ast.walk(root):
                if isinstance(node, ast.Call):
                    calls.append(CallSite(node, frame))

    def constant(self, node: ast.Assign | ast.AnnAssign) -> None:
        """Record module-level `NAME = value` and `A, B = 1, 2` so rules can follow constants."""
        if node.value is None:
            return
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            if isinstance(target, ast.Name):
                self.define(target.id, node.value)
            elif isinstance(target, (ast.Tuple, ast.List)):
                values = node.value.elts if isinstance(node.value, (ast.Tuple, ast.List)) else None
                for i, element in enumerate(target.elts):
                    if isinstance(element, ast.Name):
                        if values is not None and len(values) == len(target.elts):
                            self.define(element.id, values[i])
                        else:
                            self.semantic.ambiguous.add(element.id)

    def define(self, name: str, value: ast.expr) -> None:
        if name in self.semantic.constants:
            self.semantic.ambiguous.add(name)
        self.semantic.constants[name] = value


def run_rules(semantic: Semantic, selected: Iterable[str], severities: dict[str, Severity],
              cancelled: Cancelled | None = None) -> list[Finding]:
    """Run each selected rule over the model; a crashing rule is logged and the others still run."""
    findings: list[Finding] = []
    for rule_id in selected:
        stop_if(cancelled)
        rule = RULES[rule_id]
        try:
            violations = list(rule.function(semantic))
        except (Exception, RecursionError):
            LOG.exception("rootrank: rule %s failed on %s; its findings are skipped", rule_id, semantic.path)
            continue
        severity = severities.get(rule_id, rule.default_severity)
        for violation in violations:
            findings.append(to_finding(semantic, rule_id, severity, violation))
    return judge_fixes(findings, {rule_id: r.caused_by for rule_id, r in RULES.items() if r.caused_by},
                       frozenset(rule_id for rule_id, r in RULES.items() if r.moots_fixes))


def to_finding(semantic: Semantic, rule_id: str, severity: Severity, violation: Violation) -> Finding:
    line, column, end_line, end_column = semantic.span(violation.node)
    severity = violation.severity or severity
    if violation.at_most is not None and _RANK[severity] > _RANK[violation.at_most]:
        severity = violation.at_most
    return Finding(rule_id, severity, semantic.path, line, column, end_line, end_column, violation.message,
                   _dedupe(violation.fixes), assumes=violation.assumes)


_RANK = {Severity.INFO: 0, Severity.WARNING: 1, Severity.ERROR: 2}


def _dedupe(fixes: tuple[Fix, ...]) -> tuple[Fix, ...]:
    seen: list[Fix] = []
    for fix in fixes:
        if fix not in seen:
            seen.append(fix)
    return tuple(seen)
