"""The records of a checkpointing measurement: what the probe measured, and what the engine concluded.

`Probe` holds the facts read from the probe's JSON (scopes, storages, FLOPs); `Measurement` holds the
report: per-block numbers, the configurations compared, the plan and the findings. All immutable.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rootrank.model import Severity


class MeasureError(Exception):
    """A measurement that could not run: `kind` says why (no-torch, unknown-module, factory-raised, ...);
    `detail` carries a trimmed traceback when the user's code raised."""

    def __init__(self, kind: str, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.kind = kind
        self.detail = detail


@dataclass(frozen=True, slots=True)
class Scope:
    """One call of a block or of `torch.utils.checkpoint` during the measured forward."""

    id: int
    kind: str  # "block" | "region"
    parents: tuple[int, ...]  # the scopes active when it started, outermost first
    inputs: tuple[int, ...]  # storage ids of the tensors it was called with
    # a transformers layer: the storage ids transformers' own checkpoint call would keep (the keyword arguments
    # as its layer wrapper edits them: no KV cache); None for any other scope
    call_inputs: tuple[int, ...] | None = None
    forward_flops: int = 0
    block: int | None = None  # block index, for a block scope
    output_requires_grad: bool = True
    reentrant: bool = False
    grad_enabled: bool = True
    selective: bool = False
    detached: bool = False  # reentrant and no input requires grad: no gradient flows through it
    parameters_without_grad: int = 0
    module: str | None = None
    function: str = ""
    where: str = ""

    @property
    def engaged(self) -> bool:
        """Whether checkpointing does anything here (frees activations, recomputes in backward)."""
        return self.grad_enabled and not self.detached


@dataclass(frozen=True, slots=True)
class Storage:
    id: int
    bytes: int
    saves: tuple[tuple[int, ...], ...]  # the scope stacks it was saved under (empty: only an input)


@dataclass(frozen=True, slots=True)
class Block:
    index: int
    name: str
    cls: str
    parameters: int
    training: bool
    hf_flag: bool | None


@dataclass(frozen=True, slots=True)
class CudaRun:
    label: str
    peak_bytes: int
    step_seconds: float


@dataclass(frozen=True, slots=True)
class Probe:
    """The facts measured in the user's interpreter."""

    python: str
    torch: str
    transformers: str | None
    device: str
    model_class: str
    training: bool
    parameters: int
    parameter_bytes: int
    dtype: str | None
    attention: str | None
    hf_supported: bool | None  # None: not a transformers model
    hf_flag: bool
    hf_enable: str
    hf_use_cache: bool  # the transformers config's use_cache: the model builds a KV cache in training
    batch: tuple[str, ...]
    detection: str
    blocks: tuple[Block, ...]
    scopes: tuple[Scope, ...]
    storages: tuple[Storage, ...]
    forward_flops: int
    step_flops: int
    cuda: tuple[CudaRun, ...] = ()
    cuda_name: str = ""


@dataclass(frozen=True, slots=True)
class Configuration:
    """Which scopes are checkpointed, and what that costs and saves."""

    name: str  # none | as-configured | all-blocks | plan
    activation_bytes: int
    recompute_flops: int
    recompute_fraction: float
    blocks: tuple[int, ...]  # blocks fully checkpointed under it
    # how its bytes are counted, as it would be applied: "hf" (transformers' enable call), "apply_activation_checkpointing"
    # (torch's wrapper on the blocks), "as-configured" (the checkpoint calls the code makes), "none"
    how: str = "none"


@dataclass(frozen=True, slots=True)
class BlockReport:
    index: int
    name: str
    cls: str
    activation_bytes: int  # saved for backward without checkpointing (attributed to this block)
    checkpointed_bytes: int  # held by the block when it alone is checkpointed (its inputs)
    saving_bytes: int  # total without checkpointing minus total with this block checkpointed
    configured_bytes: int  # attributed to this block as the user's code configures it
    configured: str  # "checkpointed" | "partly" | "no" | "not engaged"
    recompute_flops: int
    recompute_fraction: float
    in_plan: bool


@dataclass(frozen=True, slots=True)
class RegionReport:
    """The user's checkpoint calls from one place (one line of code, one module class)."""

    where: str
    function: str
    modules: tuple[str, ...]
    calls: int
    reentrant: bool
    engaged: int
    saving_bytes: int  # what these calls save, the others staying as configured
    freed_bytes: int  # what they would free if they held nothing
    recompute_flops: int


@dataclass(frozen=True, slots=True)
class Plan:
    blocks: tuple[int, ...]
    budget_bytes: int | None
    fits: bool
    code: str
    how: str  # "hf" | "apply_activation_checkpointing" | "none"


@dataclass(frozen=True, slots=True)
class MeasureFinding:
    rule: str
    severity: Severity
    message: str
    blocks: tuple[str, ...] = ()
    numbers: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)


@dataclass(frozen=True, slots=True)
class Measurement:
    probe: Probe
    subject: str  # what was measured: the factory or the config path
    blocks: tuple[BlockReport, ...]
    regions: tuple[RegionReport, ...]
    configurations: tuple[Configuration, ...]
    plan: Plan
    findings: tuple[MeasureFinding, ...]
    other_bytes: int  # saved outside every block (embeddings, head, loss), without checkpointing

    def configuration(self, name: str) -> Configuration:
        return next(c for c in self.configurations if c.name == name)
