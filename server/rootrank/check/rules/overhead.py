"""checkpoint.overhead: checkpointing cheap layers, which costs compute and saves no memory.

## What it does
Flags checkpoints of activations, dropout, norms and elementwise lambdas: `checkpoint(F.gelu, x)`,
`checkpoint(self.act, x)` where `self.act = nn.GELU()`, `checkpoint(lambda t: t * 2, x)`,
`checkpoint_wrapper(nn.ReLU())`, and `check_fn`s that select only such layers.

## Why is this bad?
Checkpointing saves the activations *inside* a function at the price of running it again in
backward. A cheap layer keeps little inside (its input is saved anyway), so memory stays the same
and the recomputation is pure overhead. Checkpoint whole blocks instead.

## Fix safety
Calling the layer directly is unsafe: it changes memory use and, for dropout, the RNG stream.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from rootrank.check import edits
from rootrank.check.names import dotted
from rootrank.check.registry import Violation, rule
from rootrank.check.semantic import APPLY_ACTIVATION_CHECKPOINTING, Frame, Semantic, keyword
from rootrank.model import Applicability, Severity

RULE = "checkpoint.overhead"
CHEAP_MODULES = frozenset({
    "ReLU", "ReLU6", "GELU", "SiLU", "Mish", "Tanh", "Sigmoid", "Hardswish", "Hardsigmoid", "LeakyReLU", "ELU",
    "SELU", "Softplus", "Softmax", "LogSoftmax", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout",
    "Identity", "LayerNorm", "RMSNorm", "GroupNorm", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "Flatten",
})
CHEAP_FUNCTIONS = frozenset({
    "relu", "relu6", "gelu", "silu", "mish", "tanh", "sigmoid", "hardswish", "leaky_relu", "elu", "selu",
    "softplus", "softmax", "log_softmax", "dropout", "layer_norm", "rms_norm", "group_norm", "add", "mul", "sub",
    "div", "exp", "neg", "abs", "square", "sqrt", "rsqrt", "clamp", "where",
})
_CHEAP_METHODS = CHEAP_FUNCTIONS | {"float", "half", "to", "view", "reshape", "transpose", "contiguous", "pow"}


@rule(RULE, Severity.WARNING)
def overhead(semantic: Semantic) -> Iterator[Violation]:
    for site in semantic.checkpoints:
        if site.api not in ("checkpoint", "checkpoint_wrapper"):
            continue
        block = site.function
        kind = _cheap(semantic, block, site.frame) if block is not None else None
        if kind is None:
            continue
        assert block is not None
        message = (f"checkpointing `{semantic.text(block)}` ({kind}) recomputes it in backward and saves no memory "
                   "worth having: its input is saved anyway; checkpoint whole blocks instead")
        fix = None
        if site.api == "checkpoint":
            fix = edits.fix("Call it directly (unsafe: memory use changes)", Applicability.UNSAFE,
                            edits.call_directly(semantic, site.call))
        yield Violation(site.call.func, message, edits.fixes(fix))
    for apply in semantic.calls_to(APPLY_ACTIVATION_CHECKPOINTING):
        check = keyword(apply.node, "check_fn")
        if check is None or not isinstance(check.value, ast.Lambda):
            continue
        body = check.value.body
        if isinstance(body, ast.Call) and getattr(body.func, "id", None) == "isinstance" and len(body.args) == 2:
            kinds = body.args[1].elts if isinstance(body.args[1], ast.Tuple) else [body.args[1]]
            names = [semantic.qualified(k) or "" for k in kinds]
            if names and all(n.startswith("torch.nn.") and n.rsplit(".", 1)[-1] in CHEAP_MODULES for n in names):
                yield Violation(check.value, (
                    "`check_fn` selects only cheap layers "
                    f"({', '.join(n.rsplit('.', 1)[-1] for n in names)}): recomputing them saves no memory "
                    "worth having; select the transformer blocks instead"))


def _cheap(semantic: Semantic, block: ast.expr, frame: Frame) -> str | None:
    if isinstance(block, ast.Call):
        name = semantic.qualified(block.func) or ""
        if name.startswith("torch.nn.") and name.rsplit(".", 1)[-1] in CHEAP_MODULES:
            return f"a `{name.rsplit('.', 1)[-1]}` layer"
        return None
    if isinstance(block, ast.Lambda):
        return "an elementwise lambda" if _elementwise(semantic, block.body) else None
    qualified = semantic.qualified(block)
    if qualified and qualified.startswith("torch.") and qualified.rsplit(".", 1)[-1] in CHEAP_FUNCTIONS:
        return f"`{qualified.rsplit('.', 1)[-1]}`"
    spelled = dotted(block)
    if spelled and spelled.startswith("self.") and frame.class_ is not None:
        for assign in semantic.assigned(spelled):
            if assign.frame.class_ is frame.class_ and isinstance(assign.value, ast.Call):
                layer = semantic.qualified(assign.value.func) or ""
                if layer.startswith("torch.nn.") and layer.rsplit(".", 1)[-1] in CHEAP_MODULES:
                    return f"a `{layer.rsplit('.', 1)[-1]}` layer"
    return None


def _elementwise(semantic: Semantic, body: ast.expr) -> bool:
    for node in ast.walk(body):
        if isinstance(node, ast.Call):
            name = semantic.qualified(node.func) or ""
            method = isinstance(node.func, ast.Attribute) and not name and node.func.attr in _CHEAP_METHODS
            if not method and not (name.startswith("torch.") and name.rsplit(".", 1)[-1] in CHEAP_FUNCTIONS):
                return False
        elif not isinstance(node, (ast.Name, ast.Constant, ast.BinOp, ast.UnaryOp, ast.operator, ast.unaryop,
                                   ast.Load, ast.Attribute, ast.keyword)):
            return False
    return True
