"""checkpoint.reentrant-ddp: reentrant checkpointing that DistributedDataParallel cannot follow.

## What it does
Flags reentrant checkpoints in a file that wraps the model in
`DistributedDataParallel(..., find_unused_parameters=True)` (or sets
`TrainingArguments(ddp_find_unused_parameters=True)`), and reentrant checkpoints that run the same
module twice in one forward (a shared block, or a block checkpointed in a loop) under DDP.
`static_graph=True` (or `_set_static_graph()`) silences it: DDP then supports both. A reentrant mode
forced explicitly (`use_reentrant=True`) under DDP without `static_graph` is a warning: it trains until
a parameter goes unused or a block is reused.

## Why is this bad?
The reentrant recomputation runs its own backward inside DDP's backward: parameters are marked
ready twice and the run fails with "Expected to mark a variable ready only once".

## Fix safety
`use_reentrant=False` is unsafe (recomputation semantics change) but is the fix DDP recommends.
`static_graph=True` on the DDP call is unsafe too: it is only right when the set of used parameters
never changes between iterations.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from rootrank.check import edits
from rootrank.check.registry import Violation, rule
from rootrank.check.rules._common import at_line, report_sites
from rootrank.check.semantic import DDP, CallSite, CheckpointSite, Frame, Semantic, keyword, target_names
from rootrank.model import Applicability, Severity

RULE = "checkpoint.reentrant-ddp"


@rule(RULE, Severity.ERROR, caused_by="reentrant")
def reentrant_ddp(semantic: Semantic) -> Iterator[Violation]:
    ddp_calls = list(semantic.calls_to(*DDP))
    hf_unused = [s for s in semantic.training_arguments()
                 if _true(semantic, s.node, "ddp_find_unused_parameters")]
    for args in hf_unused:
        if _true(semantic, args.node, "gradient_checkpointing") and _hf_reentrant(semantic, args.node):
            found = keyword(args.node, "ddp_find_unused_parameters")
            assert found is not None
            yield Violation(found, (
                "`ddp_find_unused_parameters=True` with reentrant gradient checkpointing: DDP marks parameters ready "
                "twice ('Expected to mark a variable ready only once'); pass "
                '`gradient_checkpointing_kwargs={"use_reentrant": False}`'), edits.fixes(
                edits.fix("Use non-reentrant checkpointing (`use_reentrant=False`)", Applicability.UNSAFE,
                          edits.set_keyword(semantic, args.node, "gradient_checkpointing_kwargs",
                                            '{"use_reentrant": False}'))))
    if not ddp_calls and not hf_unused:
        return
    if any(_true(semantic, s.node, "static_graph") for s in ddp_calls) or any(semantic.method_calls("_set_static_graph")):
        return
    sites = list(semantic.reentrant_sites())
    unused = [s for s in ddp_calls if _true(semantic, s.node, "find_unused_parameters")]
    if unused or hf_unused:
        where = unused[0].node if unused else hf_unused[0].node
        what = "DistributedDataParallel(find_unused_parameters=True)" if unused else \
            "TrainingArguments(ddp_find_unused_parameters=True)"
        yield from report_sites(semantic, sites, (
            f"reentrant `{{api}}()` with {what} ({at_line(where)}): the recomputation's own backward marks "
            "parameters ready a second time and DDP fails with 'Expected to mark a variable ready only once'; "
            "use `use_reentrant=False` (or DDP `static_graph=True`)"))
        return
    twice = list(_twice(sites))
    yield from report_sites(semantic, twice, (
        "reentrant `{api}()` runs the same module more than once in one forward under DistributedDataParallel: "
        "its parameters are marked ready twice ('Expected to mark a variable ready only once'); use "
        "`use_reentrant=False` or DDP `static_graph=True`"))
    if ddp_calls:
        # Every other forced-reentrant site: fragile even where no block is reused yet (and reported
        # whatever the other sites are, so that fixing one site never reveals a finding on another).
        reported = {id(site.call) for site in twice}
        yield from _forced(semantic, [s for s in sites if id(s.call) not in reported], ddp_calls[0])


def _forced(semantic: Semantic, sites: list[CheckpointSite], ddp: CallSite) -> Iterator[Violation]:
    """Reentrant checkpointing asked for explicitly under DDP without `static_graph`: it trains today,
    and fails with 'marked ready twice' the day a parameter goes unused or a block is reused."""
    static = edits.fix("Declare the graph static (`static_graph=True`; unsafe: the graph must not change "
                       "between iterations)", Applicability.UNSAFE,
                       edits.add_keyword(semantic, ddp.node, "static_graph=True"))
    for site in sites:
        if not site.explicit:
            continue
        message = (f"reentrant `{site.api}()` forced under DistributedDataParallel ({at_line(ddp.node)}) without "
                   "`static_graph=True`: it works only while every parameter is used exactly once per backward; "
                   "an unused parameter or a reused block fails with 'Expected to mark a variable ready only "
                   "once'. Pass `static_graph=True` to DDP, or use `use_reentrant=False`")
        yield Violation(site.call.func, message, edits.fixes(
            edits.use_non_reentrant(semantic, site.call, site.api), static), severity=Severity.WARNING)


def _hf_reentrant(semantic: Semantic, call: ast.Call) -> bool:
    kwargs = keyword(call, "gradient_checkpointing_kwargs")
    if kwargs is None:
        return not any(k.arg is None for k in call.keywords)
    return semantic.hf_reentrant(kwargs.value, Frame()) is True


def _true(semantic: Semantic, call: ast.Call, name: str) -> bool:
    found = keyword(call, name)
    return found is not None and semantic.literal(found.value) is True


def _twice(sites: list[CheckpointSite]) -> Iterator[CheckpointSite]:
    """Sites checkpointing one module twice: the same block spelled twice in a function, or in a loop."""
    seen: dict[tuple[int, str], CheckpointSite] = {}
    for site in sites:
        block = site.function
        if block is None or site.api != "checkpoint" or isinstance(block, ast.Lambda):
            continue
        names = {n.id for n in ast.walk(block) if isinstance(n, ast.Name)}
        loop_targets = set().union(*(target_names(loop.target) for loop in site.frame.loops
                                     if isinstance(loop, (ast.For, ast.AsyncFor))))
        if site.frame.loops and not names & loop_targets:
            yield site  # the same module on every iteration
            continue
        key = (id(site.frame.function), ast.dump(block))
        if key in seen:
            yield site
        seen[key] = site
