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
from rootrank.measure.analysis import Accounting, plan_code
from tests.heavy import require_installed

HERE = Path(__file__).resolve().parent


@pytest.fixture(autouse=True)
def _torch() -> None:
    # torch runs only in children (the probe, groundtruth.py): never imported by the test process
    require_installed("torch")
    require_installed("transformers")


def real_step(factory: str, python: str = sys.executable, **config: Any) -> tuple[int, int]:
    """(bytes held for backward, the profiler's bytes) of a real CPU step, in a child process."""
    done = subprocess.run([python, str(HERE / "groundtruth.py"), factory, json.dumps(config)],
                          capture_output=True, text=True, timeout=600, cwd=HERE)
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads(done.stdout.strip().splitlines()[-1])
    return int(data["held"]), int(data["profiled"])


@cache
def measured(factory: str, device: str = "cpu", budget: int | None = None) -> Measurement:
    request = MeasureRequest(target=f"factories:{factory}", device=device, cwd=str(HERE))
    return measure(request, python=sys.executable, budget=budget)


# the transformers models: nothing checkpointed, every layer and every second layer checkpointed by
# transformers' own call (configured through it, and their all-blocks and plans applied through it)
GROUND_TRUTH = ["mlp_sequential", "tiny_llama", "checkpointed_small_layer", "llama_checkpointed", "llama_gradient_checkpointed",
                "llama_checkpointed_every_second"]


def applied(m: Measurement, name: str) -> dict[str, Any]:
    """How groundtruth.py applies a configuration: the way the measurement says it is applied
    (`Configuration.how`), with the code it would print for it."""
    configuration = m.configuration(name)
    if configuration.how in ("none", "as-configured"):
        return {"configure": configuration.how}
    if configuration.how == "apply_activation_checkpointing" and name == "all-blocks":
        return {"configure": "blocks", "names": [b.name for b in m.blocks]}  # torch's wrapper, not our code
    return {"configure": "code", "code": plan_code(m.probe, Accounting(m.probe), configuration.blocks, None)}


@pytest.mark.parametrize("factory", GROUND_TRUTH)
def test_predictions_equal_real_steps(factory: str) -> None:
    first = measured(factory)
    none, all_blocks = first.configuration("none").activation_bytes, first.configuration("all-blocks").activation_bytes
    budget = (none + all_blocks) // 2
    m = measured(factory, budget=budget)
    assert m.plan.fits and 0 < len(m.plan.blocks) < len(m.blocks)
    assert m.configuration("plan").activation_bytes <= budget
    assert m.plan.code == applied(m, "plan").get("code", m.plan.code)
    hf = m.probe.hf_supported is not None
    assert [m.configuration(c).how == "hf" for c in ("all-blocks", "plan")] == [hf, hf and m.plan.how == "hf"]

    runs = {
        "as-configured": real_step(factory, configure="as-configured"),
        "none": real_step(factory, configure="none"),
        "all-blocks": real_step(factory, **applied(m, "all-blocks")),
        "plan": real_step(factory, configure="code", code=m.plan.code),
    }
    for name, (held, profiled) in runs.items():
        predicted = m.configuration(name).activation_bytes
        assert predicted == held, (name, predicted, held)
        assert abs(profiled - held) <= 0.10 * held, (name, profiled, held)
    assert runs["plan"][0] <= budget
    assert m.configuration("none").activation_bytes > m.configuration("all-blocks").activation_bytes


def test_hf_plan_checkpoints_every_n_layers() -> None:
    """The plan for a transformers model whose installed release has the enable call's `every_n_layers`
    (transformers.every-n-layers; the probe sees the `activation_checkpointing_enable` name, 5.23+) is one
    `activation_checkpointing_enable(..., every_n_layers=n)` call when every n-th layer fits the budget, and
    its bytes are what that call, run for real, holds: transformers' layer wrapper drops the KV cache from
    the checkpoint's arguments, which torch's `checkpoint_wrapper` on the same layers keeps
    (tests/measure/evidence/hf_call_vs_wrapper.py: 1,425,412 against 1,490,948 bytes on 5.24.0)."""
    first = measured("tiny_llama")
    none, all_blocks = first.configuration("none").activation_bytes, first.configuration("all-blocks").activation_bytes
    m = measured("tiny_llama", budget=int(all_blocks + (none - all_blocks) * 0.6))
    if m.probe.hf_enable != "activation_checkpointing_enable":
        assert "every_n_layers" not in m.plan.code
        return
    n = m.plan.blocks[1] - m.plan.blocks[0]
    assert n > 1 and list(m.plan.blocks) == list(range(0, len(m.blocks), n)), m.plan.blocks
    assert f"every_n_layers={n})" in m.plan.code, m.plan.code
    held, _ = real_step("tiny_llama", configure="code", code=m.plan.code)
    assert m.plan.fits and held == m.configuration("plan").activation_bytes <= (m.plan.budget_bytes or 0)
    # the same layers under torch's wrapper, the cache left on, keep the KV cache alive: hence the wrapper's
    # code for a transformers model turns it off (its plans are checked in test_predictions_equal_real_steps)
    wrapped, _ = real_step("tiny_llama", configure="blocks", names=[m.blocks[b].name for b in m.plan.blocks])
    assert wrapped > held


TRANSFORMERS4 = HERE.parent.parent / ".venv-tf457" / "bin" / "python"


def test_transformers4_checkpointed_by_its_call() -> None:
    """On transformers 4.57 (its layer wrapper overrides `__call__` and edits the keywords before the layer's
    hooks run) a Llama checkpointed by `gradient_checkpointing_enable()`: as configured, every block and the
    plan are what real steps hold. Not `none`: with the flag set the model runs without a KV cache, and 4.57
    then passes a materialized causal mask to SDPA, which saves more than its causal kernel does without one
    (2,741,764 against 2,479,620 bytes on the tiny Llama); the measured forward is the cache-less one."""
    if not TRANSFORMERS4.exists():
        pytest.skip(f"{TRANSFORMERS4} is missing (scripts/matrix-env.sh makes it)")
    request = MeasureRequest(target="factories:llama_gradient_checkpointed", device="cpu", cwd=str(HERE))
    first = measure(request, python=str(TRANSFORMERS4))
    assert first.probe.transformers and first.probe.transformers.startswith("4.")
    none, all_blocks = first.configuration("none").activation_bytes, first.configuration("all-blocks").activation_bytes
    m = measure(request, python=str(TRANSFORMERS4), budget=(none + all_blocks) // 2)
    assert m.plan.fits and 0 < len(m.plan.blocks) < len(m.blocks)
    assert m.configuration("all-blocks").how == "hf" and "gradient_checkpointing_enable(" in applied(m, "all-blocks")["code"]
    for name in ("as-configured", "all-blocks", "plan"):
        held, _ = real_step("llama_gradient_checkpointed", str(TRANSFORMERS4), **applied(m, name))
        assert m.configuration(name).activation_bytes == held, (name, m.configuration(name).activation_bytes, held)


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


LLAMA = {"vocab_size": 256, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 4,
         "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 256}


def test_hf_config(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama", **LLAMA}))
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
    held, _ = real_step("", hf_config=LLAMA, batch=[2, 64])
    assert data["configurations"]["none"]["activation_bytes"] == held


FINDINGS = {
    "checkpointed_small_layer": {"checkpoint.overhead"},
    "partly_checkpointed": {"checkpoint.partial-coverage"},
    "checkpoint_under_no_grad": {"checkpoint.no-grad-context"},
    "llama_checkpointed_eval": {"checkpoint.no-grad-context"},
    "reentrant_frozen_input": {"checkpoint.reentrant-no-grad-inputs"},
    "all_checkpointed": set(),
    "llama_checkpointed": set(),
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
