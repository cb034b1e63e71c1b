"""What `torch.compile` reaches in a file: compiled functions, module classes and the classes they build,
and the names and attributes bound to compiled objects.

Found from `@torch.compile`, `torch.compile(x)` and `x.compile()`, following `model = Model()` to the
class and, from a compiled class, the local classes its methods construct (they are traced with it).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from rootrank.check.names import dotted
from rootrank.check.semantic import COMPILE, Semantic, loop_source_attr


@dataclass(frozen=True, slots=True)
class Compiled:
    """What the file compiles: functions, local classes (and what they build), names and attributes."""

    decorated: dict[int, ast.AST]  # id() of a function node decorated with torch.compile -> the decorator
    functions: dict[str, ast.AST]  # module-level name passed to torch.compile -> the call
    classes: dict[str, ast.AST]  # local class name -> the compile call reaching it
    names: set[str]  # spellings bound to a compiled object (`block`, `self.block`)
    element_attrs: set[str]  # attributes whose elements are compiled (`blocks` of `self.blocks`)


def compiled(semantic: Semantic) -> Compiled:
    """What the file compiles; computed once per check, since several rules ask."""
    if "compiled" not in semantic.memo:
        semantic.memo["compiled"] = _find_compiled(semantic)
    result: Compiled = semantic.memo["compiled"]
    return result


def _is_compile(semantic: Semantic, expr: ast.expr) -> bool:
    target = expr.func if isinstance(expr, ast.Call) else expr
    return semantic.qualified(target) == COMPILE


def _find_compiled(semantic: Semantic) -> Compiled:
    decorated: dict[int, ast.AST] = {}
    functions: dict[str, ast.AST] = {}
    roots: dict[str, ast.AST] = {}  # spellings of compiled objects -> the compile call
    element_attrs: set[str] = set()
    for function, _ in semantic.functions:
        for decorator in function.decorator_list:
            if _is_compile(semantic, decorator):
                decorated[id(function)] = decorator
    constructed: dict[str, str] = {}  # spelling -> local class constructed into it
    for site in semantic.assigns:
        value = site.value
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in semantic.classes:
            for target in site.targets:
                spelled = dotted(target)
                if spelled:
                    constructed[spelled] = value.func.id
    classes: dict[str, ast.AST] = {}
    for call_site in [*semantic.calls_to(COMPILE), *semantic.method_calls("compile")]:
        call = call_site.node
        if semantic.qualified(call.func) == COMPILE and call.args:
            subject: ast.expr | None = call.args[0]
        elif isinstance(call.func, ast.Attribute) and call.func.attr == "compile" and not call.args \
                and semantic.qualified(call.func) is None:
            subject = call.func.value  # `model.compile()` compiles the module in place
            spelled = dotted(subject)
            if spelled:
                roots[spelled] = call
            loop_attr = loop_source_attr(subject, call_site.frame)
            if loop_attr:
                element_attrs.add(loop_attr)
        else:
            continue
        if isinstance(subject, ast.Call) and isinstance(subject.func, ast.Name) and subject.func.id in semantic.classes:
            classes[subject.func.id] = call
            continue
        spelled = dotted(subject) if subject is not None else None
        if spelled and spelled in constructed:
            classes[constructed[spelled]] = call
        if isinstance(subject, ast.Name):
            functions.setdefault(subject.id, call)
    names = set(roots)
    names.update(f.name for f, frame in semantic.functions if id(f) in decorated and frame.class_ is None)
    for site in semantic.assigns:
        if not semantic.mentions(site.value, "compile"):
            continue
        if any(isinstance(n, ast.Call) and _is_compile(semantic, n) for n in ast.walk(site.value)):
            for target in site.targets:
                spelled = dotted(target)
                direct = isinstance(site.value, ast.Call) and _is_compile(semantic, site.value)
                if spelled and direct:
                    names.add(spelled)
                elif spelled:
                    element_attrs.add(spelled.rsplit(".", 1)[-1])  # `self.blocks = ModuleList([compile(...)...])`
                elif isinstance(target, ast.Subscript):
                    base = dotted(target.value)
                    if base:
                        element_attrs.add(base.rsplit(".", 1)[-1])
    # Everything a compiled module builds in its methods is traced with it.
    pending = list(classes)
    while pending:
        name = pending.pop()
        for inner in semantic.instantiated_classes(semantic.classes[name]):
            if inner not in classes:
                classes[inner] = classes[name]
                pending.append(inner)
    return Compiled(decorated, functions, classes, names, element_attrs)
