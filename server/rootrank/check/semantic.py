"""The semantic model of one Python file: what the single walk collected, and how to read it.

The walker fills a `Semantic` (imports, module constants, definitions, calls and assignments with the
context they sit in). Rules ask it questions: which calls are activation checkpoints and in which mode,
what a name's literal value is, which classes end up compiled. Answers that cannot be known are `None`
or `UNKNOWN`; rules stay silent on those rather than guess.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from rootrank.check import hf
from rootrank.check.names import ImportTable, dotted
from rootrank.check.source import Locator
from rootrank.stack import facts

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
LoopNode = ast.For | ast.AsyncFor | ast.While


class _Unknown:
    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN = _Unknown()

CHECKPOINT = "torch.utils.checkpoint.checkpoint"
CHECKPOINT_SEQUENTIAL = "torch.utils.checkpoint.checkpoint_sequential"
_WRAPPER_MODULE = "torch.distributed.algorithms._checkpoint.checkpoint_wrapper"
CHECKPOINT_WRAPPER = f"{_WRAPPER_MODULE}.checkpoint_wrapper"
APPLY_ACTIVATION_CHECKPOINTING = f"{_WRAPPER_MODULE}.apply_activation_checkpointing"
REENTRANT_IMPL = f"{_WRAPPER_MODULE}.CheckpointImpl.REENTRANT"
_API_OF = {CHECKPOINT: "checkpoint", CHECKPOINT_SEQUENTIAL: "checkpoint_sequential",
           CHECKPOINT_WRAPPER: "checkpoint_wrapper", APPLY_ACTIVATION_CHECKPOINTING: "apply_activation_checkpointing"}
PARTIAL = "functools.partial"
COMPILE = "torch.compile"
DDP = frozenset({"torch.nn.parallel.DistributedDataParallel",
                 "torch.nn.parallel.distributed.DistributedDataParallel"})
GRAD_OFF = frozenset({"torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad",
                      "torch.autograd.grad_mode.no_grad", "torch.autograd.grad_mode.inference_mode"})
TRAINING_ARGUMENTS = frozenset({"TrainingArguments", "Seq2SeqTrainingArguments", "SFTConfig", "GRPOConfig",
                                "DPOConfig", "ORPOConfig", "KTOConfig", "RewardConfig", "PPOConfig"})
# TRL's SFTConfig under its import paths: only SFTTrainer reads the `selective` key of its kwargs dict.
SFT_CONFIGS = frozenset({"trl.SFTConfig", "trl.trainer.SFTConfig", "trl.trainer.sft_config.SFTConfig"})
# Keyword arguments that `checkpoint()` consumes itself; anything else goes to the checkpointed function.
# The leading parameters of each checkpointing API, in order, as far as they can be passed by position
# (torch 2.x: `checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs)`,
# `checkpoint_wrapper(module, checkpoint_impl=..., checkpoint_fn=None, **kw)`,
# `apply_activation_checkpointing(model, checkpoint_wrapper_fn=..., check_fn=..., auto_wrap_policy=None)`;
# transformers: `gradient_checkpointing_enable(gradient_checkpointing_kwargs=None)`). `checkpoint`'s own
# keywords come after `*args`: they can never be positional.
POSITIONAL_PARAMETERS: dict[str, tuple[str, ...]] = {
    "checkpoint_sequential": ("functions", "segments", "input", "use_reentrant"),
    "checkpoint_wrapper": ("module", "checkpoint_impl", "checkpoint_fn"),
    "apply_activation_checkpointing": ("model", "checkpoint_wrapper_fn", "check_fn", "auto_wrap_policy"),
    "gradient_checkpointing_enable": ("gradient_checkpointing_kwargs",),
    "activation_checkpointing_enable": ("activation_checkpointing_kwargs", "every_n_layers", "offload"),
}


def bound_positionally(call: ast.Call, api: str) -> tuple[list[ast.keyword], bool]:
    """The call's positional arguments as the keywords they bind (`f(a, b)` -> `module=a, checkpoint_impl=b`),
    and whether a `*args` makes the binding unknowable."""
    names = POSITIONAL_PARAMETERS.get(api, ())
    bound: list[ast.keyword] = []
    for index, argument in enumerate(call.args[: len(names)]):
        if isinstance(argument, ast.Starred):
            return bound, True
        bound.append(ast.keyword(arg=names[index], value=argument))
    return bound, False


CHECKPOINT_OWN_KEYWORDS = frozenset({"use_reentrant", "preserve_rng_state", "context_fn", "determinism_check",
                                     "debug", "early_stop"})


@dataclass(frozen=True, slots=True)
class Frame:
    """Where a node sits: enclosing functions and class, `with` items, loops and branches around it."""

    functions: tuple[FunctionNode, ...] = ()
    class_: ast.ClassDef | None = None
    withs: tuple[ast.expr, ...] = ()
    loops: tuple[LoopNode, ...] = ()
    branches: tuple[tuple[ast.If, bool, int], ...] = ()  # (if, in the else branch, loops around the if)

    @property
    def function(self) -> FunctionNode | None:
        return self.functions[-1] if self.functions else None


@dataclass(frozen=True, slots=True)
class CallSite:
    node: ast.Call
    frame: Frame


@dataclass(frozen=True, slots=True)
class AssignSite:
    targets: tuple[ast.expr, ...]
    value: ast.expr
    frame: Frame


@dataclass(frozen=True, slots=True)
class CheckpointSite:
    """One place that turns activation checkpointing on, with its mode as far as it can be known."""

    call: ast.Call
    frame: Frame
    api: str  # "checkpoint", "checkpoint_sequential", "checkpoint_wrapper", or hf.ENABLE's name as spelled
    reentrant: bool | None  # None: cannot be known from the file
    explicit: bool  # the mode was spelled out (keyword, partial preset, checkpoint_impl, kwargs dict)
    keyword: ast.keyword | None  # the keyword carrying the mode in this call, when there is one
    splat: bool  # a `**kwargs` may carry the mode
    assumed: facts.Answer | None = None  # the version fact the mode came from (transformers' default)
    # torch >= 2.14's curried form, `checkpoint(use_reentrant=False)(fn)` / `@checkpoint(...)`: `call` is the
    # configuring call, `target` the function it is applied to when that is spelled out (`fn`).
    curried: bool = False
    target: ast.expr | None = None

    @property
    def function(self) -> ast.expr | None:
        """The checkpointed callable or module (first positional argument), when it is spelled out."""
        if self.curried:
            return self.target
        if hf.is_enable(self.api) or not self.call.args:
            return None
        first = self.call.args[0]
        return None if isinstance(first, ast.Starred) else first


@dataclass(frozen=True, slots=True)
class TrainerCheckpointing:
    """Checkpointing the HF Trainer turns on from its arguments (either spelling of the fields)."""

    args: CallSite
    flag: ast.keyword  # `gradient_checkpointing=True` or `activation_checkpointing=True`
    kwargs: ast.keyword | None
    reentrant: bool | None  # None: cannot be known from the file
    assumed: facts.Answer | None  # the version fact the mode came from, when it is a library default


@dataclass
class Semantic:
    path: str
    source: str
    locator: Locator
    names: ImportTable = field(default_factory=ImportTable)
    constants: dict[str, ast.expr] = field(default_factory=dict)
    ambiguous: set[str] = field(default_factory=set)  # module names assigned more than once
    functions: list[tuple[FunctionNode, Frame]] = field(default_factory=list)
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)
    calls: list[CallSite] = field(default_factory=list)
    assigns: list[AssignSite] = field(default_factory=list)
    memo: dict[str, Any] = field(default_factory=dict)  # answers several rules share (e.g. what is compiled)
    versions: dict[str, str] = field(default_factory=dict)  # installed library versions; missing: unknown
    # Several rules resolve the same names: by node id, valid while this Semantic (holding the nodes) lives.
    _qualified: dict[int, str | None] = field(default_factory=dict, repr=False)

    # ------------------------------------------------------------------ names and values

    def qualified(self, expr: ast.expr) -> str | None:
        key = id(expr)
        if key in self._qualified:
            return self._qualified[key]
        name = self._qualified[key] = self.names.qualified(expr)
        return name

    def is_grad_off(self, expr: ast.expr) -> bool:
        """`torch.no_grad()`, `torch.inference_mode()`, `torch.set_grad_enabled(False)` (called or bare)."""
        target = expr.func if isinstance(expr, ast.Call) else expr
        name = self.qualified(target)
        if name in GRAD_OFF:
            if name.endswith("inference_mode") and isinstance(expr, ast.Call) and expr.args:
                return self.literal(expr.args[0]) is True
            return True
        if name == "torch.set_grad_enabled" and isinstance(expr, ast.Call) and expr.args:
            return self.literal(expr.args[0]) is False
        return False

    def literal(self, expr: ast.expr | None, frame: Frame | None = None, depth: int = 0) -> object:
        """The value of a literal, a module constant or a parameter default; UNKNOWN otherwise."""
        if expr is None or depth > 8:
            return UNKNOWN
        if isinstance(expr, ast.Constant):
            return expr.value
        if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not):
            inner = self.literal(expr.operand, frame, depth + 1)
            return UNKNOWN if inner is UNKNOWN else not inner
        if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.USub):
            inner = self.literal(expr.operand, frame, depth + 1)
            return -inner if isinstance(inner, (int, float)) and not isinstance(inner, bool) else UNKNOWN
        if isinstance(expr, (ast.Tuple, ast.List)):
            values = [self.literal(e, frame, depth + 1) for e in expr.elts]
            return UNKNOWN if any(v is UNKNOWN for v in values) else tuple(values)
        if isinstance(expr, ast.Dict):
            keys = [self.literal(k, frame, depth + 1) for k in expr.keys]
            if any(k is UNKNOWN or k is None for k in keys):
                return UNKNOWN
            return {k: self.literal(v, frame, depth + 1) for k, v in zip(keys, expr.values, strict=True)}
        if isinstance(expr, ast.Name):
            for function in reversed(frame.functions if frame else ()):
                default = parameter_default(function, expr.id)
                if default is not None:
                    return self.literal(default[0], None, depth + 1) if default[0] is not None else UNKNOWN
            if expr.id in self.constants and expr.id not in self.ambiguous:
                return self.literal(self.constants[expr.id], None, depth + 1)
        return UNKNOWN

    # ------------------------------------------------------------------ checkpoint sites

    @functools.cached_property
    def partials(self) -> dict[str, tuple[str, tuple[ast.keyword, ...]]]:
        """`ckpt = functools.partial(checkpoint, use_reentrant=False)` -> {"ckpt": (qualified, presets)}."""
        found: dict[str, tuple[str, tuple[ast.keyword, ...]]] = {}
        for site in self.assigns:
            value = site.value
            if not (isinstance(value, ast.Call) and self.qualified(value.func) == PARTIAL and value.args):
                continue
            target_name = self.qualified(value.args[0])
            if target_name is None:
                continue
            for target in site.targets:
                spelled = dotted(target)
                if spelled:
                    found[spelled] = (target_name, tuple(value.keywords))
        return found

    def resolve_call(self, call: ast.Call) -> tuple[str | None, tuple[ast.keyword, ...]]:
        """The qualified callee of a call and the keywords a `functools.partial` alias preset."""
        spelled = dotted(call.func)
        if spelled is not None and spelled in self.partials:
            return self.partials[spelled]
        return self.qualified(call.func), ()

    @functools.cached_property
    def checkpoints(self) -> list[CheckpointSite]:
        sites: list[CheckpointSite] = []
        for call in self.calls:
            site = self._checkpoint_site(call)
            if site is not None:
                sites.append(site)
        return sites

    def _checkpoint_site(self, site: CallSite) -> CheckpointSite | None:
        call = site.node
        name, presets = self.resolve_call(call)
        api = _API_OF.get(name or "", "")
        if not api and isinstance(call.func, ast.Attribute) and hf.is_enable(call.func.attr):
            api = call.func.attr
        # Arguments passed by position count as the keywords they bind; a `*args` may bind anything.
        positional, starred = bound_positionally(call, api)
        given_here = (*positional, *call.keywords)
        keywords = (*presets, *given_here)
        splat = starred or any(k.arg is None for k in keywords)
        reentrant: bool | None
        if name in (CHECKPOINT, CHECKPOINT_SEQUENTIAL):
            keyword = next((k for k in given_here if k.arg == "use_reentrant"), None)
            preset = next((k for k in presets if k.arg == "use_reentrant"), None)
            given = keyword or preset
            if given is not None:
                value = self.literal(given.value, site.frame)
                reentrant = bool(value) if value is not UNKNOWN else None
            else:
                # Omitted means reentrant (PyTorch's default, with a warning), unless a splat may carry it.
                reentrant = None if splat else True
            api = "checkpoint" if name == CHECKPOINT else "checkpoint_sequential"
            curried = name == CHECKPOINT and not call.args and not splat and \
                not any(k.arg == "function" for k in keywords)
            return CheckpointSite(call, site.frame, api, reentrant, given is not None, keyword, splat,
                                  curried=curried, target=self._curried_targets.get(id(call)) if curried else None)
        if name == CHECKPOINT_WRAPPER:
            keyword = next((k for k in keywords if k.arg == "checkpoint_impl"), None)
            if keyword is None:
                reentrant = None if splat else False
            else:
                impl = self.qualified(keyword.value) or ""
                if impl == REENTRANT_IMPL:
                    reentrant = True
                else:
                    reentrant = False if impl.endswith("NO_REENTRANT") else None
            return CheckpointSite(call, site.frame, "checkpoint_wrapper", reentrant, keyword is not None,
                                  keyword if keyword in given_here else None, splat)
        if name == APPLY_ACTIVATION_CHECKPOINTING:
            wrapper = next((k for k in keywords if k.arg == "checkpoint_wrapper_fn"), None)
            mode = None if splat else False  # the default wrapper is non-reentrant
            if wrapper is not None:
                mode = self._wrapper_mode(wrapper.value)
            return CheckpointSite(call, site.frame, "apply_activation_checkpointing", mode, True, None, splat)
        if hf.is_enable(api):
            keyword = next((k for k in given_here if k.arg == hf.kwargs_name(api)), None)
            if keyword is None:
                # The mode is transformers' default, which depends on its version (unknown: reentrant, as on 4.x).
                answer = hf.default_reentrant(self.versions)
                default = hf.default_is_reentrant(answer)
                return CheckpointSite(call, site.frame, api, None if splat else default is not False,
                                      False, None, splat, answer)
            return CheckpointSite(call, site.frame, api, self.hf_reentrant(keyword.value, site.frame), True,
                                  keyword, splat)
        return None

    @functools.cached_property
    def _curried_targets(self) -> dict[int, ast.expr]:
        """id(configuring call) -> the function it is applied to: `checkpoint(...)(fn)` -> `fn`."""
        found: dict[int, ast.expr] = {}
        for site in self.calls:
            call = site.node
            if isinstance(call.func, ast.Call) and call.args and not isinstance(call.args[0], ast.Starred):
                found[id(call.func)] = call.args[0]
        return found

    def fact(self, topic: str) -> facts.Answer:
        """The version-facts answer for the installed version of the topic's library."""
        return facts.answer(topic, self.versions)

    def _wrapper_mode(self, wrapper: ast.expr) -> bool | None:
        """Reentrant or not, for a `checkpoint_wrapper_fn`: the wrapper itself or a partial of it."""
        presets: tuple[ast.keyword, ...] = ()
        if isinstance(wrapper, ast.Call) and self.qualified(wrapper.func) == PARTIAL and wrapper.args:
            target, presets = self.qualified(wrapper.args[0]), tuple(wrapper.keywords)
        else:
            spelled = dotted(wrapper)
            target, presets = self.partials.get(spelled or "", (self.qualified(wrapper), ()))
        if target != CHECKPOINT_WRAPPER:
            return None
        impl = next((k for k in presets if k.arg == "checkpoint_impl"), None)
        if impl is None:
            return False
        name = self.qualified(impl.value) or ""
        return True if name == REENTRANT_IMPL else (False if name.endswith("NO_REENTRANT") else None)

    def hf_reentrant(self, kwargs: ast.expr, frame: Frame) -> bool | None:
        value = self.literal(kwargs, frame)
        if value is None:
            return self.hf_default_reentrant()
        if isinstance(value, dict):
            mode = value.get("use_reentrant", True)
            return None if mode is UNKNOWN else bool(mode)
        if isinstance(kwargs, ast.Call) and isinstance(kwargs.func, ast.Name) and kwargs.func.id == "dict":
            for keyword in kwargs.keywords:
                if keyword.arg == "use_reentrant":
                    mode = self.literal(keyword.value, frame)
                    return None if mode is UNKNOWN else bool(mode)
            return None if any(k.arg is None for k in kwargs.keywords) else True
        return None

    def hf_default_reentrant(self) -> bool | None:
        """Whether transformers' default (no `use_reentrant` given) is reentrant here; True when unknown."""
        return hf.default_is_reentrant(hf.default_reentrant(self.versions)) is not False

    def trainer_checkpointing(self) -> Iterator[TrainerCheckpointing]:
        """`TrainingArguments(gradient_checkpointing=True)` / `(activation_checkpointing=True)` and TRL's
        configs, with the mode the Trainer will run in."""
        for args in self.training_arguments():
            call = args.node
            flag = hf.flag(call)
            if flag is None or self.literal(flag.value, args.frame) is not True:
                continue
            kwargs = hf.kwargs(call)
            splat = any(k.arg is None for k in call.keywords)
            assumed: facts.Answer | None = None
            reentrant: bool | None
            if kwargs is not None:
                value = self.literal(kwargs.value, args.frame)
                if isinstance(value, dict) and not set(value) - set(hf.OWN_KWARGS) and value:
                    kwargs_default = True  # only `every_n_layers`/`offload`: the Trainer passes None on
                else:
                    kwargs_default = False
                reentrant = self.hf_reentrant(kwargs.value, args.frame) if not kwargs_default else None
                if kwargs_default:
                    assumed = hf.default_reentrant(self.versions)
                    reentrant = hf.default_is_reentrant(assumed) is not False
                elif (isinstance(value, dict) and value.get("selective") and value.get("use_reentrant") is not True
                      and (self.qualified(call.func) or "") in SFT_CONFIGS):
                    # TRL's SFTTrainer (trl.selective) takes `selective` out and its SAC wrapper sets
                    # `use_reentrant=False`; an older TRL leaves the dict as it is (reentrant).
                    selective = self.fact("trl.selective")
                    if selective.is_(True):
                        reentrant, assumed = False, selective
                    elif not selective.known:
                        assumed = selective
            elif splat:
                reentrant = None
            else:
                assumed = hf.default_reentrant(self.versions)
                reentrant = hf.default_is_reentrant(assumed) is not False
                trl_first = (self.qualified(call.func) or "").startswith("trl.")
                if reentrant and trl_first and assumed.value is True:
                    # TRL >= 0.27 asks for `use_reentrant=False` itself on transformers < 5.
                    trl = self.fact("trl.non-reentrant-on-transformers-4")
                    if trl.is_(True):
                        reentrant, assumed = False, trl
                    elif not trl.known:
                        assumed = trl  # reentrant only with an older TRL: at most a warning that says so
            yield TrainerCheckpointing(args, flag, kwargs, reentrant, assumed)

    def reentrant_sites(self) -> Iterator[CheckpointSite]:
        """Checkpoint sites that certainly run reentrant."""
        return (s for s in self.checkpoints if s.reentrant is True)

    # ------------------------------------------------------------------ indexes (built once, on first use)

    @functools.cached_property
    def _by_callee(self) -> dict[str, list[CallSite]]:
        index: dict[str, list[CallSite]] = {}
        for site in self.calls:
            name = self.resolve_call(site.node)[0]
            if name is not None:
                index.setdefault(name, []).append(site)
        return index

    @functools.cached_property
    def _by_method(self) -> dict[str, list[CallSite]]:
        index: dict[str, list[CallSite]] = {}
        for site in self.calls:
            if isinstance(site.node.func, ast.Attribute):
                index.setdefault(site.node.func.attr, []).append(site)
        return index

    @functools.cached_property
    def _by_target(self) -> dict[str, list[AssignSite]]:
        index: dict[str, list[AssignSite]] = {}
        for site in self.assigns:
            for target in site.targets:
                spelled = dotted(target)
                if spelled is not None:
                    index.setdefault(spelled, []).append(site)
        return index

    @functools.cached_property
    def _built(self) -> dict[int, set[str]]:
        """id() of a class or function node -> local classes constructed directly inside it."""
        index: dict[int, set[str]] = {}
        for site in self.calls:
            func = site.node.func
            if isinstance(func, ast.Name) and func.id in self.classes:
                index.setdefault(0, set()).add(func.id)  # 0: anywhere in the file
                owners: list[ast.AST] = [*site.frame.functions]
                if site.frame.class_ is not None:
                    owners.append(site.frame.class_)
                for owner in owners:
                    index.setdefault(id(owner), set()).add(func.id)
        return index

    def calls_to(self, *qualified: str) -> Iterator[CallSite]:
        return (c for name in qualified for c in self._by_callee.get(name, ()))

    def method_calls(self, method: str) -> Iterator[CallSite]:
        return iter(self._by_method.get(method, ()))

    def assigned(self, spelled: str) -> list[AssignSite]:
        """Assignments whose target is spelled `spelled` (`model`, `self.blocks`)."""
        return self._by_target.get(spelled, [])

    def built_classes(self) -> set[str]:
        """Local classes constructed anywhere in the file."""
        return self._built.get(0, set())

    def trl_sets_non_reentrant(self, site: CallSite) -> bool:
        """A TRL config (`SFTConfig`, `DPOConfig`, ...) that leaves `gradient_checkpointing_kwargs` to TRL:
        TRL's trainers then pass `use_reentrant=False` themselves
        (`args.gradient_checkpointing_kwargs.setdefault("use_reentrant", False)`, trl
        trainer/dpo_trainer.py:860 and the other trainers at f2cd577, 2026-07) and call
        `enable_input_require_grads()` for PEFT models (dpo_trainer.py:694)."""
        name = self.qualified(site.node.func) or ""
        return name.startswith("trl.") and not any(
            k.arg in (None, "gradient_checkpointing_kwargs") for k in site.node.keywords)

    def calls_named(self, last: str, roots: tuple[str, ...]) -> Iterator[CallSite]:
        """Calls of a callee whose qualified name ends in `.last` under one of the top-level packages `roots`
        (a class re-exported under several module paths, e.g. Lightning's `FSDPStrategy`)."""
        for name, sites in self._by_callee.items():
            root, _, tail = name.rpartition(".")
            if tail == last and root.split(".")[0] in roots:
                yield from sites

    def training_arguments(self) -> Iterator[CallSite]:
        """`TrainingArguments(...)`-like constructors of transformers and trl."""
        for name, sites in self._by_callee.items():
            root, _, last = name.rpartition(".")
            if last in TRAINING_ARGUMENTS and root.split(".")[0] in ("transformers", "trl"):
                yield from sites

    def instantiated_classes(self, within: ast.AST) -> set[str]:
        """Local classes constructed inside `within` (a class or function node)."""
        return self._built.get(id(within), set())

    def span(self, node: ast.AST) -> tuple[int, int, int, int]:
        line = getattr(node, "lineno", 1)
        end_line = getattr(node, "end_lineno", None) or line
        column = self.locator.column(line, getattr(node, "col_offset", 0))
        end_column = self.locator.column(end_line, getattr(node, "end_col_offset", None) or 0)
        return line, column, end_line, end_column

    def mentions(self, node: ast.AST, word: str) -> bool:
        """Whether the lines `node` spans contain `word` (a cheap test before walking it)."""
        first = getattr(node, "lineno", 1)
        last = getattr(node, "end_lineno", None) or first
        return any(word in self.locator.line_text(line) for line in range(first, last + 1))

    def text(self, node: ast.AST) -> str:
        line, column, end_line, end_column = self.span(node)
        return self.source[self.locator.offset(line, column):self.locator.offset(end_line, end_column)]


def parameter_default(function: FunctionNode, name: str) -> tuple[ast.expr | None] | None:
    """(default,) when `name` is a parameter of `function` ((None,) when it has no default), else None."""
    args = function.args
    positional = [*args.posonlyargs, *args.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    for arg, default in zip(positional, defaults, strict=True):
        if arg.arg == name:
            return (default,)
    for arg, kw_default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        if arg.arg == name:
            return (kw_default,)
    for extra in (args.vararg, args.kwarg):
        if extra is not None and extra.arg == name:
            return (None,)
    return None


def keyword(call: ast.Call, name: str) -> ast.keyword | None:
    return next((k for k in call.keywords if k.arg == name), None)


def loop_source_attr(expr: ast.expr, frame: Frame) -> str | None:
    """For a loop target `block` of `for block in self.blocks`, the attribute name "blocks"."""
    if not isinstance(expr, ast.Name):
        return None
    for loop in reversed(frame.loops):
        if isinstance(loop, (ast.For, ast.AsyncFor)) and expr.id in target_names(loop.target):
            source = loop.iter
            if isinstance(source, ast.Call) and isinstance(source.func, ast.Name) and source.func.id == "enumerate" \
                    and source.args:
                source = source.args[0]
            spelled = dotted(source)
            return spelled.rsplit(".", 1)[-1] if spelled else None
    return None


def target_names(target: ast.expr) -> set[str]:
    return {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
