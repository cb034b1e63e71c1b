"""`rootrank measure` against real runs: what it predicts for each configuration is what a real CPU
forward+backward with that configuration holds for backward (tests/measure/groundtruth.py), within 10 %
of the profiler's accounting; meta equals CPU; each finding fires on the model built for it only.

The measurements run as a user's do: the probe in a subprocess of this interpreter (which has torch).
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from rootrank.measure import MeasureError, Measurement, MeasureRequest, measure
from tests.heavy import require_module

HERE = Path(__file__).resolve().parent


@pytest.fixture(autouse=True)
def _torch() -> None:
    require_module("torch")
    require_module("transformers")


@cache
def measured(factory: str, device: str = "cpu", budget: int | None = None) -> Measurement:
    request = MeasureRequest(target=f"factories:{factory}", device=device, cwd=str(HERE))
    return measure(request, python=sys.executable, budget=budget)


def factories() -> Any:
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    import factories as module
    import groundtruth

    return module, groundtruth


def clean(model: Any) -> Any:
    """The model with the checkpointing its code configures removed."""
    module, _ = factories()
    for sub in model.modules():
        if isinstance(sub, module.Block):
            sub.mode = "none"
    if getattr(model, "is_activation_checkpointing", False):
        model.activation_checkpointing_disable()
    return model


GROUND_TRUTH = ["mlp_sequential", "tiny_llama", "checkpointed_small_layer"]


@pytest.mark.parametrize("factory", GROUND_TRUTH)
def test_predictions_equal_real_steps(factory: str) -> None:
    module, truth = factories()
    first = measured(factory)
    none, all_blocks = first.configuration("none").activation_bytes, first.configuration("all-blocks").activation_bytes
    budget = (none + all_blocks) // 2
    m = measured(factory, budget=budget)
    assert m.plan.fits and 0 < len(m.plan.blocks) < len(m.blocks)
    assert m.configuration("plan").activation_bytes <= budget

    def real(configure: Any) -> tuple[int, int]:
        model, batch = getattr(module, factory)()
        configure(model)
        held = truth.held_bytes(model, batch)
        model, batch = getattr(module, factory)()
        configure(model)
        return held, truth.profiler_bytes(model, batch)

    names = [b.name for b in m.blocks]
    runs = {
        "as-configured": real(lambda model: None),
        "none": real(clean),
        "all-blocks": real(lambda model: truth.checkpoint_blocks(clean(model), names)),
        "plan": real(lambda model: exec(m.plan.code, {"model": clean(model)})),
    }
    for name, (held, profiled) in runs.items():
        predicted = m.configuration(name).activation_bytes
        assert predicted == held, (name, predicted, held)
        assert abs(profiled - held) <= 0.10 * held, (name, profiled, held)
    assert runs["plan"][0] <= budget
    assert m.configuration("none").activation_bytes > m.configuration("all-blocks").activation_bytes


def test_recompute_flops_are_the_blocks_forward() -> None:
    m = measured("mlp_sequential")
    # 6 blocks of two 64x256 Linear layers on 256 rows: 2 * 2*256*64*256 FLOPs each
    assert [b.recompute_flops for b in m.blocks] == [2 * 2 * 256 * 64 * 256] * 6
    assert m.probe.forward_flops == sum(b.recompute_flops for b in m.blocks)
    assert m.configuration("all-blocks").recompute_fraction == pytest.approx(m.probe.forward_flops / m.probe.step_flops)


def test_meta_equals_cpu() -> None:
    cpu, meta = measured("tiny_llama_eager", "cpu"), measured("tiny_llama_eager", "meta")
    assert meta.probe.device == "meta"
    assert [(c.name, c.activation_bytes, c.recompute_flops) for c in meta.configurations] == \
        [(c.name, c.activation_bytes, c.recompute_flops) for c in cpu.configurations]
    assert meta.blocks == cpu.blocks


def test_hf_config(tmp_path: Path) -> None:
    module, truth = factories()
    module.llama_config().to_json_file(str(tmp_path / "config.json"))
    out = tmp_path / "out.json"
    command = [sys.executable, "-m", "rootrank", "measure", "--hf-config", str(tmp_path / "config.json"),
               "--batch-size", "2", "--seq-len", "64", "--device", "cpu", "--python", sys.executable,
               "--format", "json"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    out.write_text(done.stdout)
    data = json.loads(done.stdout)
    assert data["schema"] == "rootrank.measure/1" and data["environment"]["device"] == "cpu"
    assert [b["name"] for b in data["blocks"]] == [f"model.layers.{i}" for i in range(4)]
    assert data["plan"]["how"] == "hf"
    from transformers import LlamaForCausalLM

    model = LlamaForCausalLM(module.llama_config()).train()
    import torch

    ids = torch.zeros(2, 64, dtype=torch.long)
    assert data["configurations"]["none"]["activation_bytes"] == truth.held_bytes(model, {"input_ids": ids, "labels": ids})


FINDINGS = {
    "checkpointed_small_layer": {"checkpoint.overhead"},
    "partly_checkpointed": {"checkpoint.partial-coverage"},
    "checkpoint_under_no_grad": {"checkpoint.no-grad-context"},
    "llama_checkpointed_eval": {"checkpoint.no-grad-context"},
    "reentrant_frozen_input": {"checkpoint.reentrant-no-grad-inputs"},
    "all_checkpointed": set(),
    "mlp_sequential": set(),
    "tiny_llama": set(),
}


@pytest.mark.parametrize(("factory", "expected"), FINDINGS.items())
def test_findings(factory: str, expected: set[str]) -> None:
    m = measured(factory)
    assert {f.rule for f in m.findings} == expected, [f.message for f in m.findings]
    for finding in m.findings:
        assert any(ch.isdigit() for ch in finding.message) and finding.numbers


def test_partial_coverage_numbers() -> None:
    m = measured("partly_checkpointed")
    finding = next(f for f in m.findings if f.rule == "checkpoint.partial-coverage")
    assert finding.numbers["blocks_not_checkpointed"] == 4 and finding.blocks == tuple(f"layers.{i}" for i in range(2, 6))
    assert [b.configured for b in m.blocks] == ["checkpointed"] * 2 + ["no"] * 4


def test_factory_traceback_is_trimmed_to_user_frames() -> None:
    with pytest.raises(MeasureError) as info:
        measured("broken")
    assert info.value.kind == "factory-raised"
    assert "not divisible" in str(info.value)
    assert "factories.py" in info.value.detail and "_shapes" in info.value.detail
    assert "probe.py" not in info.value.detail


def test_unknown_module_and_factory() -> None:
    for target, kind in (("nosuchmodule:build", "unknown-module"), ("factories:nosuch", "unknown-factory")):
        with pytest.raises(MeasureError) as info:
            measure(MeasureRequest(target=target, device="cpu", cwd=str(HERE)), python=sys.executable)
        assert info.value.kind == kind


def test_interpreter_without_torch(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "bare")], check=True)
    bare = tmp_path / "bare" / "bin" / "python"
    done = subprocess.run([sys.executable, "-m", "rootrank", "measure", "factories:mlp_sequential",
                           "--python", str(bare)], cwd=HERE, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.startswith("rootrank: torch cannot be imported by") and done.stderr.count("\n") == 1


def test_cancel_stops_the_probe() -> None:
    stop = threading.Event()
    seen: list[str] = []

    def progress(message: str, done: int, total: int) -> None:
        seen.append(message)
        stop.set()

    with pytest.raises(MeasureError) as info:
        measure(MeasureRequest(target="factories:tiny_llama", device="cpu", cwd=str(HERE)), python=sys.executable,
                on_progress=progress, cancelled=stop.is_set)
    assert info.value.kind == "cancelled" and seen
