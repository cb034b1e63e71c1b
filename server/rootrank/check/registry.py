"""The code-rule registry: one function per failure-entry id, registered with `@rule(...)`.

A rule is a function `(Semantic) -> Iterable[Violation]`; the walker turns violations into findings
(adding the id, the severity and the path). Registering the same id twice fails at import time, so
two modules can never silently answer for one entry.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rootrank.model import Fix, Severity

if TYPE_CHECKING:
    from rootrank.check.semantic import Semantic


@dataclass(frozen=True, slots=True)
class Violation:
    """What a rule reports: where (a node), what (a message), and how to fix it (preferred fix first)."""

    node: ast.AST
    message: str
    fixes: tuple[Fix, ...] = ()
    assumes: tuple[str, ...] = ()  # library versions the violation depends on (Finding.assumes)
    at_most: Severity | None = None  # a cap on the entry's severity (a version that could not be read)
    # A milder severity than the entry's, for a site that is fragile rather than failing (e.g. forced
    # reentrant checkpointing under DDP that works until a parameter goes unused).
    severity: Severity | None = None


RuleFunction = Callable[["Semantic"], Iterable[Violation]]


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    function: RuleFunction
    default_severity: Severity  # used when the failure entry does not exist (yet) in rules/
    caused_by: str = ""  # the behaviour that causes this failure (e.g. "reentrant"), for judging fixes
    # An error of this rule means the call cannot run on the installed version at all, so another rule's fix
    # at the same site would leave it failing: those fixes are withdrawn (fixes.judge_fixes).
    moots_fixes: bool = False


RULES: dict[str, Rule] = {}


class DuplicateRuleError(RuntimeError):
    pass


def rule(entry_id: str, default_severity: Severity = Severity.WARNING,
         caused_by: str = "", moots_fixes: bool = False) -> Callable[[RuleFunction], RuleFunction]:
    """Register a check for the failure entry `entry_id`; `caused_by` names the behaviour behind it
    (a fix that keeps that behaviour is never offered at a site where this check reports an error)."""

    def register(function: RuleFunction) -> RuleFunction:
        if entry_id in RULES:
            raise DuplicateRuleError(f"{entry_id} is registered twice: {RULES[entry_id].function.__module__} "
                                     f"and {function.__module__}")
        RULES[entry_id] = Rule(entry_id, function, default_severity, caused_by, moots_fixes)
        return function

    return register
