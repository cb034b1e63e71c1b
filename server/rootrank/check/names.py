"""Import and alias table: turns a local expression into the qualified name it refers to.

`from torch.utils.checkpoint import checkpoint as ckpt` makes `ckpt` resolve to
`torch.utils.checkpoint.checkpoint`; `import torch.utils.checkpoint as cp` makes `cp.checkpoint` resolve
to the same name; `import torch` makes the dotted spelling resolve to itself. This is the part of
torchfix's `QualifiedNameProvider` that the checks need, over stdlib `ast`.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

STAR_EXPORTS = {
    "torch.utils.checkpoint": ("checkpoint", "checkpoint_sequential"),
    "torch.distributed.algorithms._checkpoint.checkpoint_wrapper": (
        "checkpoint_wrapper", "apply_activation_checkpointing", "CheckpointImpl"),
}


@dataclass
class ImportTable:
    """Local name -> qualified name, filled from every import statement of a module."""

    bindings: dict[str, str] = field(default_factory=dict)

    def add(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    self.bindings[alias.asname] = alias.name
                else:
                    # `import torch.utils.checkpoint` binds `torch`, and dotted uses spell the full path.
                    top = alias.name.split(".", 1)[0]
                    self.bindings[top] = top
            return
        if node.level:  # relative imports name project modules, never torch
            return
        module = node.module or ""
        for alias in node.names:
            if alias.name == "*":
                # Only the modules whose public names the checks need; other stars bind nothing known.
                for name in STAR_EXPORTS.get(module, ()):
                    self.bindings[name] = f"{module}.{name}"
                continue
            self.bindings[alias.asname or alias.name] = f"{module}.{alias.name}" if module else alias.name

    def qualified(self, expr: ast.expr) -> str | None:
        """The qualified name of a Name/Attribute chain whose root was imported, else None."""
        spelled = dotted(expr)
        if spelled is None:
            return None
        head, dot, rest = spelled.partition(".")
        root = self.bindings.get(head)
        if root is None:
            return None
        return root + dot + rest


def dotted(expr: ast.expr) -> str | None:
    """`self.blocks[0]` -> None, `self.model.blocks` -> "self.model.blocks": the plain spelling of a chain."""
    parts: list[str] = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name):
        return None
    parts.append(expr.id)
    return ".".join(reversed(parts))


def last_name(expr: ast.expr) -> str | None:
    """The rightmost identifier of a Name/Attribute/Call/Subscript chain (`self.blocks[0]` -> "blocks")."""
    while True:
        if isinstance(expr, ast.Name):
            return expr.id
        if isinstance(expr, ast.Attribute):
            return expr.attr
        if isinstance(expr, (ast.Subscript, ast.Call)):
            expr = expr.value if isinstance(expr, ast.Subscript) else expr.func
            continue
        return None
