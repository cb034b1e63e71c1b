"""From the probe's facts to a report: activation memory of any set of checkpointed scopes, the plan
for a budget, and the findings (with the failure library's ids).

The accounting: a storage saved for backward is held unless every save of it happened inside a
checkpointed scope; a checkpointed scope (the outermost one, when they nest) holds the tensors it was
called with instead. A region that does not engage (run under no_grad, or reentrant with inputs that do
not require grad) frees its activations and holds nothing, as torch does. Each storage counts once.

A checkpointed transformers layer holds what transformers' own call (`activation_checkpointing_enable`,
`gradient_checkpointing_enable`) passes to its checkpoint: its layer wrapper sets `use_cache=False` and drops
the KV cache first (the probe records these arguments as the block's `call_inputs`), and the model creates no
cache. torch's `checkpoint_wrapper` on the same layer would keep the model's KV cache alive (every layer's
keys and values), so the code printed for it on a transformers model turns the cache off too
(`model.config.use_cache = False`), and block configurations are counted with `call_inputs` either way.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

from rootrank.measure.records import (
    Block,
    BlockReport,
    Configuration,
    CudaRun,
    MeasureError,
    MeasureFinding,
    Measurement,
    Plan,
    Probe,
    RegionReport,
    Scope,
    Storage,
)
from rootrank.model import Severity

PROTOCOL = "rootrank.measure-probe/1"
OVERHEAD_EFFICIENCY = 0.25  # a region that keeps more than 3/4 of what it frees is not worth its recompute
PARTIAL_SHARE = 0.10  # uncheckpointed blocks worth reporting hold at least this share of the memory


def parse_probe(data: dict[str, Any]) -> Probe:
    """The probe's `result` JSON as records; MeasureError when it is not what this engine reads."""
    if not isinstance(data, dict) or data.get("protocol") != PROTOCOL:
        raise MeasureError("probe-failed", f"the probe answered in an unknown format (expected {PROTOCOL})")
    try:
        model = data["model"]
        hf = model.get("hf") or {}
        scopes = tuple(Scope(
            id=int(s["id"]), kind=str(s["kind"]), parents=tuple(s["parents"]), inputs=tuple(s["inputs"]),
            call_inputs=tuple(s["call_inputs"]) if s.get("call_inputs") is not None else None,
            forward_flops=int(s.get("forward_flops", 0)), block=s.get("block"),
            output_requires_grad=bool(s.get("output_requires_grad", True)),
            reentrant=bool(s.get("reentrant", False)), grad_enabled=bool(s.get("grad_enabled", True)),
            selective=bool(s.get("selective", False)), detached=bool(s.get("detached", False)),
            parameters_without_grad=int(s.get("parameters_without_grad", 0)), module=s.get("module"),
            function=str(s.get("function", "")), where=str(s.get("where", "")),
        ) for s in data["scopes"])
        cuda = data.get("cuda") or {}
        return Probe(
            python=str(data.get("python", "")), torch=str(data["torch"]), transformers=data.get("transformers"),
            device=str(data["device"]), model_class=str(model["class"]), training=bool(model["training"]),
            parameters=int(model["parameters"]), parameter_bytes=int(model["parameter_bytes"]),
            dtype=model.get("dtype"), attention=model.get("attention"),
            hf_supported=hf.get("supports") if hf else None, hf_flag=bool(hf.get("flag_set", False)),
            hf_enable=str(hf.get("enable", "")),
            hf_use_cache=bool(hf.get("use_cache", False)),
            batch=tuple(f"{b['dtype']}[{', '.join(str(d) for d in b['shape'])}]" for b in data.get("batch", [])),
            detection=str(data["detection"]),
            blocks=tuple(Block(index=int(b["index"]), name=str(b["name"]), cls=str(b["class"]),
                               parameters=int(b["parameters"]), training=bool(b["training"]),
                               hf_flag=b.get("hf_flag")) for b in data["blocks"]),
            scopes=scopes,
            storages=tuple(Storage(id=int(s["id"]), bytes=int(s["bytes"]),
                                   saves=tuple(tuple(stack) for stack in s["saves"])) for s in data["storages"]),
            forward_flops=int(data["flops"]["forward"]), step_flops=int(data["flops"]["step"]),
            cuda=tuple(CudaRun(label, int(run["peak_bytes"]), float(run["step_seconds"]))
                       for label, run in cuda.items() if isinstance(run, dict)),
            cuda_name=str(cuda.get("name", "")),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise MeasureError("probe-failed", f"the probe's result is incomplete: {type(exc).__name__}: {exc}") from None


class Accounting:
    """Activation memory and recompute of a set of checkpointed scopes."""

    def __init__(self, probe: Probe) -> None:
        self.probe = probe
        self.scopes = {s.id: s for s in probe.scopes}
        self.bytes = {s.id: s.bytes for s in probe.storages}
        self.block_scopes: dict[int, list[int]] = {}
        for scope in probe.scopes:
            if scope.kind == "block" and scope.block is not None:
                self.block_scopes.setdefault(scope.block, []).append(scope.id)

    def block_of(self, stack: Iterable[int]) -> int | None:
        """The block a scope stack lies in (the innermost block scope on it)."""
        found = None
        for sid in stack:
            scope = self.scopes[sid]
            if scope.kind == "block":
                found = scope.block
        return found

    def held(self, checkpointed: Collection[int], hold_inputs: bool = True) -> dict[int, int | None]:
        """storage id -> the block it is attributed to (None: outside every block), for the storages
        held for backward when the scopes `checkpointed` are checkpointed (a transformers layer keeping
        what transformers' own call passes it, `call_inputs`)."""
        chosen = set(checkpointed)
        kept: dict[int, int | None] = {}
        for storage in self.probe.storages:
            for stack in storage.saves:
                if chosen.isdisjoint(stack):
                    kept[storage.id] = self.block_of(stack)
                    break
        if hold_inputs:
            for sid in sorted(chosen):
                scope = self.scopes[sid]
                if not scope.engaged or not chosen.isdisjoint(scope.parents):
                    continue
                owner = scope.block if scope.kind == "block" else self.block_of(scope.parents)
                inputs = scope.call_inputs if scope.call_inputs is not None else scope.inputs
                for storage_id in inputs:
                    kept.setdefault(storage_id, owner)
        return kept

    def total(self, checkpointed: Collection[int], hold_inputs: bool = True) -> int:
        return sum(self.bytes[s] for s in self.held(checkpointed, hold_inputs))

    def per_block(self, checkpointed: Collection[int]) -> dict[int | None, int]:
        out: dict[int | None, int] = {}
        for storage_id, block in self.held(checkpointed).items():
            out[block] = out.get(block, 0) + self.bytes[storage_id]
        return out

    def recompute(self, checkpointed: Collection[int]) -> int:
        chosen = set(checkpointed)
        return sum(self.scopes[s].forward_flops for s in chosen
                   if self.scopes[s].engaged and chosen.isdisjoint(self.scopes[s].parents))

    def blocks_scopes(self, blocks: Iterable[int]) -> set[int]:
        return {sid for b in blocks for sid in self.block_scopes.get(b, [])}

    def configured_scopes(self) -> set[int]:
        return {s.id for s in self.probe.scopes if s.kind == "region"}

    def covering_regions(self, block: int) -> list[Scope]:
        """The user's checkpoint calls that cover the whole of `block`: around it, or of its own forward."""
        name = self.probe.blocks[block].name
        found = []
        for sid in self.block_scopes.get(block, []):
            scope = self.scopes[sid]
            found += [self.scopes[p] for p in scope.parents if self.scopes[p].kind == "region"]
        for region in self.probe.scopes:
            if region.kind == "region" and region.module is not None and region.module == name \
                    and self.block_of(region.parents) == block:
                found.append(region)
        return found


def fraction(part: float, whole: float) -> float:
    return part / whole if whole else 0.0


def analyze(probe: Probe, subject: str, budget: int | None = None, severities: dict[str, Severity] | None = None,
            ) -> Measurement:
    acct = Accounting(probe)
    step = probe.step_flops
    every = range(len(probe.blocks))
    configured = acct.configured_scopes()
    none_total = acct.total(())
    none_blocks = acct.per_block(())
    configured_blocks = acct.per_block(configured)

    savings: dict[int, int] = {}
    held_alone: dict[int, int] = {}
    for b in every:
        scopes = acct.blocks_scopes([b])
        savings[b] = none_total - acct.total(scopes)
        held_alone[b] = acct.per_block(scopes).get(b, 0)
    recompute = {b: acct.recompute(acct.blocks_scopes([b])) for b in every}

    plan_blocks, _ = choose_plan(acct, savings, recompute, budget)
    if budget is not None and plan_how(probe, plan_blocks) != "hf":
        plan_blocks = prefer_every_n(probe, acct, plan_blocks, budget)
    plan_scopes = acct.blocks_scopes(plan_blocks)

    def config(name: str, scopes: set[int], blocks: Iterable[int], how: str) -> Configuration:
        flops = acct.recompute(scopes)
        return Configuration(name, acct.total(scopes), flops, fraction(flops, step),
                             tuple(sorted(blocks)), how)

    states = {b: block_state(acct, b) for b in every}
    configurations = (
        config("none", set(), (), "none"),
        config("as-configured", configured, [b for b, s in states.items() if s == "checkpointed"],
               "as-configured" if configured else "none"),
        config("all-blocks", acct.blocks_scopes(every), every, plan_how(probe, every)),
        config("plan", plan_scopes, plan_blocks, plan_how(probe, plan_blocks)),
    )
    fits = budget is None or configurations[-1].activation_bytes <= budget  # every_n_layers may fit where greedy did not
    blocks = tuple(BlockReport(
        index=b, name=probe.blocks[b].name, cls=probe.blocks[b].cls,
        activation_bytes=none_blocks.get(b, 0), checkpointed_bytes=held_alone[b], saving_bytes=savings[b],
        configured_bytes=configured_blocks.get(b, 0), configured=states[b],
        recompute_flops=recompute[b], recompute_fraction=fraction(recompute[b], step), in_plan=b in plan_blocks,
    ) for b in every)
    regions = region_reports(acct, configured)
    plan = Plan(tuple(sorted(plan_blocks)), budget, fits, plan_code(probe, acct, plan_blocks, budget),
                plan_how(probe, plan_blocks))
    measurement = Measurement(probe=probe, subject=subject, blocks=blocks, regions=regions,
                              configurations=configurations, plan=plan, findings=(),
                              other_bytes=none_blocks.get(None, 0))
    findings = tuple(find(measurement, acct, budget, severities or {}))
    return Measurement(probe=probe, subject=subject, blocks=blocks, regions=regions, configurations=configurations,
                       plan=plan, findings=findings, other_bytes=none_blocks.get(None, 0))


def block_state(acct: Accounting, block: int) -> str:
    covering = acct.covering_regions(block)
    if covering:
        return "checkpointed" if any(r.engaged for r in covering) else "not engaged"
    scopes = set(acct.block_scopes.get(block, []))
    inside = [s for s in acct.probe.scopes if s.kind == "region" and not scopes.isdisjoint(s.parents)]
    if inside:
        return "partly" if any(r.engaged for r in inside) else "not engaged"
    return "no"


def choose_plan(acct: Accounting, savings: dict[int, int], recompute: dict[int, int], budget: int | None,
                ) -> tuple[list[int], bool]:
    """The blocks to checkpoint: for a budget, the fewest recompute FLOPs that fit it (blocks taken by
    memory saved per FLOP); without one, every block that saves memory at least half as efficiently
    as the best one does."""
    def ratio(b: int) -> float:
        return savings[b] / max(recompute[b], 1)

    useful = sorted((b for b in savings if savings[b] > 0), key=lambda b: (-ratio(b), b))
    if budget is None:
        best = ratio(useful[0]) if useful else 0.0
        return sorted(b for b in useful if ratio(b) >= best / 2), True
    chosen: list[int] = []
    if acct.total(()) <= budget:
        return [], True
    for b in useful:
        chosen.append(b)
        if acct.total(acct.blocks_scopes(chosen)) <= budget:
            return sorted(chosen), True
    return sorted(chosen), False


def prefer_every_n(probe: Probe, acct: Accounting, chosen: list[int], budget: int) -> list[int]:
    """For a transformers model, every n-th layer (one call: `every_n_layers=n`) instead of the greedy
    choice when it fits and recomputes at most a quarter more."""
    count = len(probe.blocks)
    if not (probe.hf_supported and probe.hf_enable == "activation_checkpointing_enable"
            and all(b.hf_flag is not None for b in probe.blocks)):
        return chosen
    limit = acct.recompute(acct.blocks_scopes(chosen)) * 1.25
    for n in range(count, 0, -1):
        layers = list(range(0, count, n))
        scopes = acct.blocks_scopes(layers)
        if acct.total(scopes) <= budget and acct.recompute(scopes) <= limit:
            return layers
    return chosen


def every_n(blocks: Collection[int], count: int) -> int | None:
    """n when `blocks` are exactly the layers i with i % n == 0 (transformers' every_n_layers)."""
    if not blocks:
        return None
    for n in range(1, count + 1):
        if set(blocks) == set(range(0, count, n)):
            return n
    return None


def plan_how(probe: Probe, blocks: Collection[int]) -> str:
    if not blocks:
        return "none"
    hf_layers = probe.hf_supported and all(b.hf_flag is not None for b in probe.blocks)
    n = every_n(blocks, len(probe.blocks))
    if hf_layers and n is not None and (n == 1 or probe.hf_enable == "activation_checkpointing_enable"):
        return "hf"
    return "apply_activation_checkpointing"


def _names_expression(names: list[str]) -> str:
    """A short Python expression for a list of module names (a range when they are prefix + index)."""
    prefix = names[0].rsplit(".", 1)[0] + "." if "." in names[0] else ""
    tails = [n[len(prefix):] for n in names]
    if all(n.startswith(prefix) for n in names) and all(t.isdigit() for t in tails):
        indexes = [int(t) for t in tails]
        spelled = (f"range({indexes[-1] + 1})" if indexes == list(range(indexes[-1] + 1))
                   else "(" + ", ".join(str(i) for i in indexes) + ("," if len(indexes) == 1 else "") + ")")
        return f'(f"{prefix}{{i}}" for i in {spelled})'
    return "(" + ", ".join(repr(n) for n in names) + ("," if len(names) == 1 else "") + ")"


def plan_code(probe: Probe, acct: Accounting, blocks: Collection[int], budget: int | None) -> str:
    """The code that checkpoints `blocks` of `model` (the plan's, or any configuration's) the way
    `plan_how` says, removing the current checkpointing first."""
    if not blocks:
        return "# nothing to checkpoint: the activations already fit" if budget is not None else ""
    lines: list[str] = []
    if acct.configured_scopes() or probe.hf_flag:
        if probe.hf_flag:
            disable = "activation_checkpointing_disable" if probe.hf_enable == "activation_checkpointing_enable" \
                else "gradient_checkpointing_disable"
            lines.append(f"model.{disable}()  # replaces the checkpointing configured today")
        else:
            lines.append("# first remove today's checkpoint()/checkpoint_wrapper calls, then:")
    how = plan_how(probe, blocks)
    if how == "hf":
        n = every_n(blocks, len(probe.blocks))
        if probe.hf_enable == "activation_checkpointing_enable":
            every = f", every_n_layers={n}" if n != 1 else ""
            lines.append(f'model.activation_checkpointing_enable(activation_checkpointing_kwargs={{"use_reentrant": False}}{every})')
        else:
            lines.append('model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})')
        return "\n".join(lines)
    names = [probe.blocks[b].name for b in sorted(blocks)]
    lines += [
        "from functools import partial",
        "",
        "from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (",
        "    CheckpointImpl,",
        "    apply_activation_checkpointing,",
        "    checkpoint_wrapper,",
        ")",
        "",
        f"blocks = {{model.get_submodule(name) for name in {_names_expression(names)}}}",
        "apply_activation_checkpointing(",
        "    model,",
        "    checkpoint_wrapper_fn=partial(checkpoint_wrapper, checkpoint_impl=CheckpointImpl.NO_REENTRANT),",
        "    check_fn=lambda module: module in blocks,",
        ")",
    ]
    if probe.hf_use_cache:
        # as transformers' own call does: a checkpointed layer would keep the model's KV cache (every layer's
        # keys and values) alive until backward, and training never reads it
        lines.append("model.config.use_cache = False  # else each checkpoint keeps the KV cache alive")
    return "\n".join(lines)


def region_reports(acct: Accounting, configured: set[int]) -> tuple[RegionReport, ...]:
    groups: dict[tuple[str, str], list[Scope]] = {}
    for sid in sorted(configured):
        scope = acct.scopes[sid]
        groups.setdefault((scope.where, scope.function), []).append(scope)
    reports = []
    for (where, function), members in groups.items():
        ids = {s.id for s in members}
        others = configured - ids
        without = acct.total(others)
        freed = without - acct.total(others | ids, hold_inputs=False)
        modules = tuple(dict.fromkeys(s.module for s in members if s.module is not None))
        reports.append(RegionReport(
            where=where, function=function, modules=modules, calls=len(members), reentrant=members[0].reentrant,
            engaged=sum(s.engaged for s in members), saving_bytes=without - acct.total(configured),
            freed_bytes=freed, recompute_flops=acct.recompute(configured) - acct.recompute(others),
        ))
    return tuple(reports)


# --------------------------------------------------------------------------- findings


def _span(names: list[str]) -> str:
    """model.layers.0-11 for consecutive indexed names, else the names (at most 4)."""
    if not names:
        return ""
    prefix = names[0].rsplit(".", 1)[0] + "." if "." in names[0] else ""
    tails = [n[len(prefix):] for n in names]
    if len(names) > 1 and all(n.startswith(prefix) for n in names) and all(t.isdigit() for t in tails):
        indexes = [int(t) for t in tails]
        parts, start = [], indexes[0]
        for prev, cur in zip(indexes, [*indexes[1:], None], strict=True):
            if cur != prev + 1:
                parts.append(str(start) if start == prev else f"{start}-{prev}")
                start = cur if cur is not None else start
        return prefix + ",".join(parts)
    return ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")


def human_bytes(value: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.2f} {unit}"
        value /= 1024
    return f"{value:.2f} TiB"


def human_flops(value: float) -> str:
    for unit in ("", "K", "M", "G", "T", "P"):
        if abs(value) < 1000 or unit == "P":
            return f"{value:.0f} FLOP" if not unit else f"{value:.2f} {unit}FLOP"
        value /= 1000
    return f"{value:.2f} PFLOP"


def find(m: Measurement, acct: Accounting, budget: int | None, severities: dict[str, Severity],
         ) -> Iterable[MeasureFinding]:
    probe = m.probe
    configured = m.configuration("as-configured")
    none = m.configuration("none")

    def finding(rule: str, default: Severity, message: str, blocks: list[str], **numbers: Any) -> MeasureFinding:
        return MeasureFinding(rule, severities.get(rule, default), message, tuple(blocks), numbers)

    regions = [s for s in probe.scopes if s.kind == "region"]
    # checkpoint.no-grad-context: configured, but torch has no backward to recompute for
    under_no_grad = [s for s in regions if not s.grad_enabled]
    if under_no_grad:
        places = sorted({s.where for s in under_no_grad})
        yield finding("checkpoint.no-grad-context", Severity.INFO,
                      f"{len(under_no_grad)} checkpoint call(s) run under torch.no_grad() ({', '.join(places[:3])}): "
                      "checkpointing does nothing there (no activations are kept and none are recomputed)",
                      sorted({s.module for s in under_no_grad if s.module}), calls=len(under_no_grad))
    flagged = [b for b in probe.blocks if b.hf_flag]
    idle = [b for b in flagged if m.blocks[b.index].configured in ("no", "not engaged")]
    if idle:
        why = ("the model is in eval mode (model.training is False)" if not probe.training
               else "these layers are in eval mode (module.training is False)")
        yield finding("checkpoint.no-grad-context", Severity.INFO,
                      f"gradient checkpointing is enabled on {len(idle)} of {len(probe.blocks)} layers but {why}: "
                      f"transformers runs them without checkpointing; activation memory "
                      f"{human_bytes(configured.activation_bytes)} is what it would be without "
                      f"({human_bytes(none.activation_bytes)}); call model.train() before the training step",
                      [b.name for b in idle], activation_bytes=configured.activation_bytes,
                      without_bytes=none.activation_bytes)

    # checkpoint.reentrant-no-grad-inputs: no gradient reaches the parameters of the region
    detached = [s for s in regions if s.detached and s.parameters_without_grad > 0]
    if detached:
        params = sum(s.parameters_without_grad for s in detached)
        names = sorted({s.module for s in detached if s.module}, key=_natural)
        yield finding("checkpoint.reentrant-no-grad-inputs", Severity.ERROR,
                      f"{len(detached)} reentrant checkpoint call(s) ({_span(names) or detached[0].where}) get inputs "
                      f"that do not require grad: their {params:,} parameters receive no gradient; pass "
                      "use_reentrant=False (or make the input require grad: model.enable_input_require_grads())",
                      names, calls=len(detached), parameters_without_grad=params)

    # checkpoint.partial-coverage: some blocks checkpointed, the others hold most of the memory
    covered = [b for b in m.blocks if b.configured == "checkpointed"]
    bare = [b for b in m.blocks if b.configured in ("no", "partly")]
    fits_budget = budget is not None and configured.activation_bytes <= budget
    if covered and bare and not fits_budget:
        held = sum(b.configured_bytes for b in bare)
        share = fraction(held, configured.activation_bytes)
        if share >= PARTIAL_SHARE:
            all_blocks = m.configuration("all-blocks")
            yield finding("checkpoint.partial-coverage", Severity.WARNING,
                          f"{len(bare)} of {len(m.blocks)} blocks are not checkpointed ({_span([b.name for b in bare])}) "
                          f"and hold {share:.0%} of activation memory ({human_bytes(held)} of "
                          f"{human_bytes(configured.activation_bytes)}); checkpointing every block: "
                          f"{human_bytes(all_blocks.activation_bytes)}",
                          [b.name for b in bare], blocks_not_checkpointed=len(bare), block_count=len(m.blocks),
                          held_bytes=held, share=round(share, 4), all_blocks_bytes=all_blocks.activation_bytes)

    # checkpoint.overhead: regions that keep about as much as they free, or are recomputed twice
    for region in m.regions:
        if not region.engaged:
            continue
        nested = [s for s in regions if s.where == region.where and s.function == region.function and s.engaged
                  and any(acct.scopes[p].kind == "region" and acct.scopes[p].engaged for p in s.parents)]
        efficiency = fraction(region.saving_bytes, region.freed_bytes)
        label = f"`{region.function}`" + (f" ({_span(list(region.modules))})" if region.modules else "")
        if nested:
            yield finding("checkpoint.overhead", Severity.INFO,
                          f"checkpointing {label} inside another checkpointed region recomputes it twice in "
                          f"backward and saves {human_bytes(region.saving_bytes)}",
                          list(region.modules), calls=len(nested), saving_bytes=region.saving_bytes)
        elif region.freed_bytes and efficiency < OVERHEAD_EFFICIENCY:
            yield finding("checkpoint.overhead", Severity.INFO,
                          f"checkpointing {label} saves {fraction(region.saving_bytes, configured.activation_bytes + region.saving_bytes):.1%} "
                          f"of activation memory ({human_bytes(region.saving_bytes)}) for "
                          f"{fraction(region.recompute_flops, probe.step_flops):.1%} more FLOPs: it keeps its inputs "
                          f"({human_bytes(region.freed_bytes - region.saving_bytes)}), about as much as it frees "
                          f"({human_bytes(region.freed_bytes)})",
                          list(region.modules), saving_bytes=region.saving_bytes, freed_bytes=region.freed_bytes,
                          recompute_flops=region.recompute_flops,
                          recompute_fraction=round(fraction(region.recompute_flops, probe.step_flops), 4))


def _natural(name: str) -> tuple[Any, ...]:
    return tuple(int(p) if p.isdigit() else p for p in name.split("."))


def parse_bytes(text: str) -> int:
    """'20GiB', '20 GB', '512MiB', '1.5e9' -> bytes; ValueError on anything else."""
    value = text.strip().replace(" ", "")
    units = {"tib": 1 << 40, "gib": 1 << 30, "mib": 1 << 20, "kib": 1 << 10, "tb": 10**12, "gb": 10**9,
             "mb": 10**6, "kb": 10**3, "t": 1 << 40, "g": 1 << 30, "m": 1 << 20, "k": 1 << 10, "b": 1}
    lower = value.lower()
    suffix = next((u for u in units if lower.endswith(u) and lower[: -len(u)]), "")
    number, factor = float(lower[: len(lower) - len(suffix)]), units.get(suffix, 1)
    if number <= 0:
        raise ValueError(f"not a positive size: {text!r}")
    return int(number * factor)
