"""The version matrix: each version fact asserted against the real libraries, on two columns side by side.

Columns: the test venv itself (transformers 5.x, pinned in requirements-test-heavy.txt) and `.venv-tf457`
(transformers 4.57.x on top of the same torch and peft, made by scripts/matrix-env.sh). tests/stack/probe.py
runs in each and reports what really happens (the kwargs a tiny model's enable call passes, whether input
grads are enabled, which warning text is printed); each test compares that with the facts table for the
version the column has installed, read from package metadata as `rootrank check --python` reads it.
Missing columns are skipped locally and fail in CI (tests/heavy.py).
"""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rootrank.diagnose import diagnose_text
from rootrank.environment import find_environment
from rootrank.stack import facts
from tests.heavy import heavy_required

REPO = Path(__file__).resolve().parents[2]
COLUMNS = {"newest": Path(sys.executable), "transformers-4.57": REPO / ".venv-tf457" / "bin" / "python"}
# One venv per DeepSpeed / Lightning release the facts need, over the test venv (scripts/matrix-env.sh).
DEEPSPEED = {"deepspeed-0.19.3": REPO / ".venv-ds0193" / "bin" / "python",
             "deepspeed-0.19.4": REPO / ".venv-ds0194" / "bin" / "python"}
LIGHTNING = {"lightning-2.6.6": REPO / ".venv-lightning" / "bin" / "python"}
LORA = REPO / "tests" / "fixtures" / "logs" / "none--lora-trainer-transformers5240-deprecation-warnings" / "train.py"


def require_module(name: str) -> None:
    """Skip (locally) / fail (CI) when `name` is not installed, without importing it here: the libraries
    run in the children only, so this process stays small (children forked from it inherit its peak RSS,
    which the memory-bound tests of tests/trust measure)."""
    import importlib.util

    if importlib.util.find_spec(name) is None:
        if heavy_required():
            pytest.fail(f"{name} is required in CI but is not installed")
        pytest.skip(f"{name} is not installed")


def interpreter(column: str) -> Path:
    python = {**COLUMNS, **DEEPSPEED, **LIGHTNING}[column]
    if not python.exists():
        if heavy_required():
            pytest.fail(f"{python} is missing: run scripts/matrix-env.sh")
        pytest.skip(f"{python} is missing (scripts/matrix-env.sh makes it)")
    return python


@functools.lru_cache(maxsize=4)
def _probe(python: str) -> dict[str, Any]:
    done = subprocess.run([python, str(Path(__file__).with_name("probe.py"))], capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def observe(column: str) -> tuple[dict[str, Any], dict[str, str]]:
    """(what the real libraries did, the versions the column's metadata says)."""
    require_module("torch")
    require_module("transformers")
    python = interpreter(column)
    versions = find_environment(str(python), ()).versions
    seen = _probe(str(python))
    assert versions["transformers"] == seen["transformers"], "metadata and the imported library disagree"
    return seen, versions


def value(topic: str, versions: dict[str, str]) -> Any:
    answer = facts.answer(topic, versions)
    assert answer.known, f"{topic}: {answer.assumed} is outside the table"
    return answer.value


@pytest.mark.parametrize("column", sorted(COLUMNS))
def test_default_kwargs(column: str) -> None:
    seen, versions = observe(column)
    assert seen["default_use_reentrant"], "no layer was checkpointed"
    assert set(seen["default_use_reentrant"]) == {value("transformers.default-kwargs", versions)}


@pytest.mark.parametrize("column", sorted(COLUMNS))
def test_input_grads(column: str) -> None:
    seen, versions = observe(column)
    expected = value("transformers.input-grads", versions)
    assert seen["input_grads"] is expected and seen["embedding_output_requires_grad"] is expected


@pytest.mark.parametrize("column", sorted(COLUMNS))
def test_names(column: str) -> None:
    seen, versions = observe(column)
    new = value("transformers.activation-checkpointing-names", versions)
    assert set(seen["names"].values()) == {new}
    deprecation = ("FutureWarning: `gradient_checkpointing_enable` is deprecated and will be removed in v6. "
                   "Use `activation_checkpointing_enable` instead.")
    assert seen["enable_warnings"] == ([deprecation] if new else [])
    if new:  # the printed text is what the context entry recognises, and it is no alarm
        diagnosis = diagnose_text(deprecation + "\n")
        assert diagnosis.root_cause is None or diagnosis.root_cause.severity.value != "error"
        assert any(s.rule == "checkpoint.hf-deprecated-names" for s in diagnosis.findings)


@pytest.mark.parametrize("column", sorted(COLUMNS))
def test_every_n_layers(column: str) -> None:
    seen, versions = observe(column)
    assert seen["every_n_layers"] is value("transformers.every-n-layers", versions)
    assert seen["offload"] is value("transformers.offload", versions)
    if seen["every_n_layers"]:
        assert seen["every_n_layers_checkpointed"] == 2  # of 4 layers, with every_n_layers=2


@pytest.mark.parametrize("column", sorted(COLUMNS))
def test_unsupported_message(column: str) -> None:
    seen, versions = observe(column)
    assert seen["unsupported_message"] == value("transformers.unsupported-model-message", versions).format(
        model_class="NoCheckpointing")
    root = diagnose_text(f"ValueError: {seen['unsupported_message']}\n").root_cause
    assert root is not None and root.rule == "checkpoint.hf-unsupported-model"


@pytest.mark.parametrize("column", sorted(COLUMNS))
def test_torch_missing_use_reentrant(column: str) -> None:
    seen, versions = observe(column)
    assert seen["torch_missing_use_reentrant"] == [value("torch.missing-use-reentrant", versions)]


@pytest.mark.parametrize("column", sorted(COLUMNS))
def test_torch_reentrant_kwargs(column: str) -> None:
    seen, versions = observe(column)
    assert value("torch.reentrant-kwargs", versions) is True
    assert seen["torch_reentrant_kwargs"] == "Unexpected keyword arguments: scale"


@pytest.mark.parametrize("column", sorted(COLUMNS))
def test_torch_respect_saved_tensors_hooks(column: str) -> None:
    seen, versions = observe(column)
    own = value("torch.respect-saved-tensors-hooks", versions)
    # Not checkpoint's own keyword: the reentrant checkpoint rejects it as the function's keyword.
    expected = "ValueError: Unexpected keyword arguments: respect_saved_tensors_hooks" if own is None \
        else f"ValueError: {own}"
    assert seen["torch_respect_saved_tensors_hooks"] == expected


@pytest.mark.parametrize("column", sorted(COLUMNS))
def test_torch_curried_checkpoint(column: str) -> None:
    seen, versions = observe(column)
    curried = value("torch.curried-checkpoint", versions)
    assert seen["torch_curried"] == (None if curried is True else f"TypeError: {curried}")


@pytest.mark.parametrize("column", sorted(COLUMNS))
def test_old_kwargs_field(column: str) -> None:
    """Where the old field is only a mirror, a dict assigned to it later (TRL's PEFT + ZeRO-3 forcing when the
    user gave no kwargs) never reaches the field the Trainer reads; a change inside given kwargs does."""
    seen, versions = observe(column)
    forced = {"use_reentrant": True}
    lost = value("transformers.old-kwargs-field", versions) == "mirror"
    assert seen["old_kwargs_field"] == {"unset": None if lost else forced, "set": forced}


def test_torch_214_facts_are_the_recorded_source_text() -> None:
    """torch 2.14 is not installed in the test environment: its rows state what its
    torch/utils/checkpoint.py says (read in the 2.14.1 wheel); the check reads them, so they are pinned here."""
    on_214 = {"torch": "2.14.1"}
    assert value("torch.curried-checkpoint", on_214) is True
    assert value("torch.respect-saved-tensors-hooks", on_214) == (
        "Passing `context_fn`, `debug`, or `respect_saved_tensors_hooks` is only supported when use_reentrant=False.")
    assert value("torch.missing-use-reentrant", on_214) == value("torch.missing-use-reentrant", {"torch": "2.13.0"})
    on_215 = {"torch": "2.15.0"}  # read in the 2.15.0 wheel: the same code, the warning reworded
    for topic in ("torch.curried-checkpoint", "torch.respect-saved-tensors-hooks", "torch.reentrant-kwargs"):
        assert value(topic, on_215) == value(topic, on_214)
    assert value("torch.missing-use-reentrant", on_215) == (
        "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. In a future release, "
        "calling checkpoint without use_reentrant will raise an exception. use_reentrant=False is recommended, but "
        "if you need to preserve the current default behavior, you can pass use_reentrant=True. Refer to docs for "
        "more details on the differences between the two variants.")
    assert not facts.answer("torch.missing-use-reentrant", {"torch": "2.16.0"}).known, "2.16 was not read"


@pytest.mark.parametrize("column", sorted(COLUMNS))
def test_peft_kbit_empty_kwargs(column: str) -> None:
    require_module("peft")
    seen, versions = observe(column)
    assert value("peft.kbit-empty-kwargs", versions) is True
    # `{}` reaches torch's checkpoint: no `use_reentrant`, so torch's reentrant default and its warning.
    assert seen["peft_kbit_kwargs"] and all(k == {} for k in seen["peft_kbit_kwargs"])
    assert seen["peft_kbit_warnings"] == ["torch.utils.checkpoint: the use_reentrant parameter should be"]


def _run(python: Path, script: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(python), str(script)], capture_output=True, text=True, timeout=600, cwd=cwd,
                          check=False)


def _check(python: Path, *args: str) -> subprocess.CompletedProcess[str]:
    rootrank = [sys.executable, "-m", "rootrank", "check", "--format", "json", "--python", str(python), *args]
    return subprocess.run(rootrank, capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.parametrize("column", sorted(COLUMNS))
def test_lora_trainer_run_and_check_agree(column: str, tmp_path: Path) -> None:
    """The LoRA script fails on 4.57 and trains on 5.x, and `rootrank check` says so for each."""
    require_module("peft")
    _, versions = observe(column)
    python = interpreter(column)
    script = tmp_path / "train.py"
    shutil.copy(LORA, script)
    run = _run(python, script, tmp_path)
    checked = _check(python, str(script))
    findings = json.loads(checked.stdout)["findings"]
    errors = [f for f in findings if f["severity"] == "error"]
    if value("transformers.input-grads", versions):
        assert run.returncode == 0 and run.stdout.rstrip().endswith("done"), run.stderr[-3000:]
        assert not errors and checked.returncode == 0, findings
        return
    assert run.returncode != 0
    assert "element 0 of tensors does not require grad and does not have a grad_fn" in run.stderr
    assert [f["rule"] for f in errors] == ["checkpoint.reentrant-no-grad-inputs"]
    assert errors[0]["assumes"] == [f"transformers {versions['transformers']}"]
    # The fix that removes the error, applied for the version it was made for, gives code that trains there.
    fixed = subprocess.run([sys.executable, "-m", "rootrank", "check", "--fix", "--unsafe-fixes", "--python",
                            str(python), str(script)], capture_output=True, text=True, timeout=120, check=False)
    assert "use_reentrant" in script.read_text(), fixed.stderr
    rerun = _run(python, script, tmp_path)
    assert rerun.returncode == 0 and rerun.stdout.rstrip().endswith("done"), rerun.stderr[-3000:]
    assert not [f for f in json.loads(_check(python, str(script)).stdout)["findings"] if f["severity"] == "error"]


NEW_NAMES = sorted((REPO / "tests" / "fixtures" / "logs").glob("checkpoint.api-too-new--*-transformers4576/train.py"))


@pytest.mark.parametrize("column", sorted(COLUMNS))
@pytest.mark.parametrize("script", NEW_NAMES, ids=lambda p: p.parent.name)
def test_new_names_run_and_check_agree(column: str, script: Path, tmp_path: Path) -> None:
    """Code written with the `activation_checkpointing*` names really fails where the facts say the names are
    missing (with the message the entry matches), and `rootrank check --python` reports it there only."""
    require_module("peft")
    _, versions = observe(column)
    python = interpreter(column)
    copy = tmp_path / "train.py"
    shutil.copy(script, copy)
    run = _run(python, copy, tmp_path)
    findings = json.loads(_check(python, str(copy)).stdout)["findings"]
    too_new = [f for f in findings if f["rule"] == "checkpoint.api-too-new"]
    if value("transformers.activation-checkpointing-names", versions):
        assert run.returncode == 0 and run.stdout.rstrip().endswith("done"), run.stderr[-3000:]
        assert not too_new, too_new
        return
    assert run.returncode != 0
    root = diagnose_text(run.stdout + run.stderr).root_cause
    assert root is not None and root.rule == "checkpoint.api-too-new", run.stderr[-3000:]
    assert too_new and all(f["severity"] == "error" for f in too_new)
    assert {tuple(f["assumes"]) for f in too_new} == {(f"transformers {versions['transformers']}",)}


CURRIED = REPO / "tests" / "fixtures" / "logs" / "checkpoint.api-too-new--curried-checkpoint-torch213" / "train.py"


def test_curried_checkpoint_run_and_check_agree(tmp_path: Path) -> None:
    """The curried form really fails where the facts say torch lacks it, and only there is it reported."""
    _, versions = observe("newest")
    python = interpreter("newest")
    copy = tmp_path / "train.py"
    shutil.copy(CURRIED, copy)
    run = _run(python, copy, tmp_path)
    too_new = [f for f in json.loads(_check(python, str(copy)).stdout)["findings"] if f["rule"] == "checkpoint.api-too-new"]
    if value("torch.curried-checkpoint", versions) is True:
        assert run.returncode == 0 and not too_new, (run.stderr[-3000:], too_new)
        return
    assert run.returncode != 0 and f"TypeError: {value('torch.curried-checkpoint', versions)}" in run.stderr
    assert [f["assumes"] for f in too_new] == [[f"torch {versions['torch']}"]]


SELECTIVE = (REPO / "tests" / "fixtures" / "logs" /
             "checkpoint.reentrant-kwargs--trl-selective-key-in-plain-trainer-transformers5240" / "train.py")


@pytest.mark.parametrize("column", sorted(COLUMNS))
def test_selective_key_outside_trl_run_and_check_agree(column: str, tmp_path: Path) -> None:
    """TRL's `selective` key in a plain Trainer's kwargs dict (no `use_reentrant`) really fails on every
    column with torch's reentrant-keyword error, the entry diagnoses that output, and `rootrank check --python`
    reports the same error at the dict; with `use_reentrant=False` said it trains and nothing is reported."""
    observe(column)
    python = interpreter(column)
    copy = tmp_path / "train.py"
    shutil.copy(SELECTIVE, copy)
    run = _run(python, copy, tmp_path)
    assert run.returncode != 0 and "ValueError: Unexpected keyword arguments: selective" in run.stderr, \
        run.stderr[-3000:]
    root = diagnose_text(run.stdout + run.stderr).root_cause
    assert root is not None and root.rule == "checkpoint.reentrant-kwargs"
    findings = [f for f in json.loads(_check(python, str(copy)).stdout)["findings"]
                if f["rule"] == "checkpoint.reentrant-kwargs"]
    assert [f["severity"] for f in findings] == ["error"] and "`selective`" in findings[0]["message"], findings
    said = copy.read_text().replace('{"selective": True}', '{"selective": True, "use_reentrant": False}')
    assert said != copy.read_text()
    copy.write_text(said)
    rerun = _run(python, copy, tmp_path)
    assert rerun.returncode == 0 and rerun.stdout.rstrip().endswith("done"), rerun.stderr[-3000:]
    assert not [f for f in json.loads(_check(python, str(copy)).stdout)["findings"]
                if f["rule"] == "checkpoint.reentrant-kwargs"]


def test_accelerate_offload_requires() -> None:
    """accelerate.activation-checkpointing-offload against the installed Accelerate: where the facts say the
    option exists, the plugin refuses it without activation checkpointing and on FSDP1 with the texts the
    entry's pattern matches, and accepts it next to FSDP2 activation checkpointing."""
    require_module("accelerate")
    python = interpreter("newest")
    versions = find_environment(str(python), ()).versions
    probe = ("import json, warnings; warnings.simplefilter('ignore')\n"
             "from accelerate.utils import FullyShardedDataParallelPlugin as P\n"
             "out = []\n"
             "for kw in ({'fsdp_version': 2}, {'activation_checkpointing': True, 'fsdp_version': 1},\n"
             "           {'activation_checkpointing': True, 'fsdp_version': 2}):\n"
             "    try:\n"
             "        P(activation_checkpointing_offload=True, **kw); out.append(None)\n"
             "    except (TypeError, ValueError) as error:\n"
             "        out.append(f'{type(error).__name__}: {error}')\n"
             "print(json.dumps(out))\n")
    done = subprocess.run([str(python), "-c", probe], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    if not value("accelerate.activation-checkpointing-offload", versions):
        assert all(s is not None and s.startswith("TypeError") for s in seen), seen
        return
    assert seen[2] is None, seen
    for said, requires in zip(seen[:2], ("activation_checkpointing=True", "fsdp_version=2"), strict=True):
        root = diagnose_text(f"Traceback (most recent call last):\n  File \"train.py\", line 1, in <module>\n{said}\n")
        assert said == f"ValueError: `activation_checkpointing_offload=True` requires `{requires}`.", seen
        assert root.root_cause is not None and root.root_cause.rule == "checkpoint.fsdp-offload-config", said


NESTED_PROBE = """
import functools, json, sys, warnings
warnings.simplefilter("ignore")
import torch
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import apply_activation_checkpointing
from transformers import LlamaConfig, LlamaForCausalLM
from transformers.models.llama.modeling_llama import LlamaDecoderLayer, LlamaMLP

calls = [0]
forward = LlamaMLP.forward
def counted(self, x):
    calls[0] += 1
    return forward(self, x)
LlamaMLP.forward = counted
config = LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                     num_attention_heads=2, num_key_value_heads=2, use_cache=False)
seen = {}
for mode in (None, True, False):
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).train()
    if mode is not None:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": mode})
    apply_activation_checkpointing(model, check_fn=lambda m: isinstance(m, LlamaDecoderLayer))
    calls[0] = 0
    ids = torch.randint(1, 64, (2, 8))
    model(input_ids=ids, labels=ids).loss.backward()
    seen[str(mode)] = calls[0]
print(json.dumps(seen))
"""


@pytest.mark.parametrize("column", sorted(COLUMNS))
def test_nested_checkpoint_recomputes(column: str, tmp_path: Path) -> None:
    """transformers' checkpoint inside FSDP's (non-reentrant) `checkpoint_wrapper`: counted on the real
    libraries, a reentrant inner checkpoint runs the block's forward once more than the wrapper alone, a
    non-reentrant one does not; `rootrank check --python` reports the nesting exactly where it costs."""
    observe(column)
    python = interpreter(column)
    done = subprocess.run([str(python), "-c", NESTED_PROBE], capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["None"] == 2 and seen["False"] == seen["None"] and seen["True"] == seen["None"] + 1, seen
    for mode in ("True", "False"):
        source = tmp_path / f"nested_{mode}.py"
        source.write_text(
            "from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import apply_activation_checkpointing\n"
            "from transformers import LlamaConfig, LlamaForCausalLM\n"
            "from transformers.models.llama.modeling_llama import LlamaDecoderLayer\n\n"
            "model = LlamaForCausalLM(LlamaConfig())\n"
            f'model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={{"use_reentrant": {mode}}})\n'
            "apply_activation_checkpointing(model, check_fn=lambda m: isinstance(m, LlamaDecoderLayer))\n")
        findings = [f for f in json.loads(_check(python, str(source)).stdout)["findings"]
                    if f["rule"] == "checkpoint.fsdp-double-checkpoint"]
        assert bool(findings) == (seen[mode] > seen["None"]), (mode, seen, findings)


DEEPSPEED_PROBE = """
import json, warnings
warnings.simplefilter("ignore")
import torch, deepspeed
from deepspeed.accelerator import get_accelerator

ck = deepspeed.checkpointing
# DeepSpeed's CPU accelerator has no streams (`Stream` is None): its reentrant checkpoint creates one and never
# uses it (the use is commented out in checkpointing.py), so a stand-in lets the real checkpoint run on CPU.
type(get_accelerator()).Stream = property(lambda self: (lambda device=None: None))

def block(x, mask=None):
    return (x * 2 if mask is None else x * mask).sum()

x = torch.randn(4, requires_grad=True)
mask = torch.ones(4, requires_grad=True)
try:
    ck.checkpoint(block, x, mask=mask).backward()
    kwargs = None
except TypeError as error:
    kwargs = f"TypeError: {error}"
# cpu_checkpointing without partition_activations: the module globals configure() sets from the config (it
# needs a process group first); each copy_to_device call of the forward is recorded.
copies, real_copy = [], ck.copy_to_device
ck.copy_to_device = lambda *a, **k: copies.append(str(k.get("device"))) or real_copy(*a, **k)
cpu_copies = {}
for cpu in (False, True):
    ck.PARTITION_ACTIVATIONS, ck.CPU_CHECKPOINT = False, cpu
    copies.clear()
    ck.checkpoint(lambda t: (t * 2).sum(), torch.randn(4, requires_grad=True))
    cpu_copies[str(cpu)] = list(copies)
print(json.dumps({"deepspeed": deepspeed.__version__, "kwargs": kwargs,
                  "mask_grad": mask.grad is not None and bool(mask.grad.abs().sum() > 0),
                  "non_reentrant": callable(getattr(ck, "non_reentrant_checkpoint", None)),
                  "cpu_copies": cpu_copies}))
"""


@functools.lru_cache(maxsize=8)
def _child(python: Path, probe: str) -> dict[str, Any]:
    """What a probe printed in a column's interpreter (run once per column)."""
    done = subprocess.run([str(python), "-c", probe], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    seen: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return seen


@pytest.mark.parametrize("column", sorted(DEEPSPEED))
def test_deepspeed_checkpoint_kwargs(column: str, tmp_path: Path) -> None:
    """deepspeed.checkpoint-kwargs on the real DeepSpeed either side of the change: a keyword tensor is a
    `TypeError` where the facts say positional only, and is taken (it gets its gradient) where they say keyword
    tensors; `rootrank check --python` reports the call exactly where it fails, with the error it raises."""
    require_module("torch")
    python = interpreter(column)
    versions = find_environment(str(python), ()).versions
    seen = _child(python, DEEPSPEED_PROBE)
    assert versions["deepspeed"] == seen["deepspeed"], "metadata and the imported library disagree"
    takes = value("deepspeed.checkpoint-kwargs", versions)
    assert seen["kwargs"] == (None if takes else "TypeError: checkpoint() got an unexpected keyword argument 'mask'")
    assert seen["mask_grad"] is takes
    source = tmp_path / "ds_kwargs.py"
    source.write_text("import deepspeed\n\n\ndef forward(block, x, mask):\n"
                      "    return deepspeed.checkpointing.checkpoint(block, x, mask=mask)\n")
    findings = [f for f in json.loads(_check(python, str(source)).stdout)["findings"]
                if f["rule"] == "checkpoint.reentrant-kwargs"]
    if takes:
        assert not findings, findings
        return
    assert [(f["severity"], f["assumes"]) for f in findings] == [("error", [f"deepspeed {seen['deepspeed']}"])]
    assert seen["kwargs"] in findings[0]["message"], findings


@pytest.mark.parametrize("column", sorted(DEEPSPEED))
def test_deepspeed_non_reentrant_and_cpu_checkpointing(column: str) -> None:
    """deepspeed.non-reentrant-checkpoint and deepspeed.cpu-checkpointing: the non-reentrant function exists, and
    `cpu_checkpointing` without `partition_activations` makes a CPU copy of the inputs (one `copy_to_device` more
    per checkpointed forward, to `cpu`)."""
    require_module("torch")
    python = interpreter(column)
    versions = find_environment(str(python), ()).versions
    seen = _child(python, DEEPSPEED_PROBE)
    assert seen["non_reentrant"] is value("deepspeed.non-reentrant-checkpoint", versions)
    offloads = value("deepspeed.cpu-checkpointing", versions)
    assert seen["cpu_copies"] == {"False": ["cpu"], "True": ["cpu", "cpu"] if offloads else ["cpu"]}, seen


LIGHTNING_PROBE = """
import json, warnings
import torch
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import CheckpointWrapper, checkpoint_wrapper
import lightning
from lightning.fabric.strategies import FSDPStrategy
from lightning.fabric.strategies.fsdp import _setup_activation_checkpointing

# FSDPStrategy.setup_module wraps the module in FSDP (which needs an accelerator: not on CPU), then calls
# _setup_activation_checkpointing with the strategy's policy kwargs; the probe makes that second call itself.
strategy = FSDPStrategy(activation_checkpointing_policy={torch.nn.Linear})
seen = {"lightning": lightning.__version__}
for by_hand in (False, True):
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 4))
    if by_hand:
        model[0] = checkpoint_wrapper(model[0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _setup_activation_checkpointing(model, strategy._activation_checkpointing_kwargs)
    seen[str(by_hand)] = {"wrapped": [i for i, m in enumerate(model) if isinstance(m, CheckpointWrapper)],
                          "warnings": [str(w.message) for w in caught]}
print(json.dumps(seen))
"""


@pytest.mark.parametrize("column", sorted(LIGHTNING))
def test_lightning_fsdp_already_checkpointed(column: str, tmp_path: Path) -> None:
    """lightning.fsdp-already-checkpointed on the real Lightning: its FSDP policy wraps every matching layer of a
    plain model; on a model with a layer wrapped by hand it prints the facts' warning and wraps nothing more
    (only the hand-wrapped layer stays checkpointed). `rootrank diagnose` names the warning and `rootrank check
    --python` reports the policy next to `checkpoint_wrapper` with the version it assumed."""
    require_module("torch")
    python = interpreter(column)
    versions = find_environment(str(python), ()).versions
    seen = _child(python, LIGHTNING_PROBE)
    assert versions["lightning"] == seen["lightning"], "metadata and the imported library disagree"
    warning = value("lightning.fsdp-already-checkpointed", versions)
    assert seen["False"] == {"wrapped": [0, 2], "warnings": []}, seen
    assert seen["True"] == {"wrapped": [0], "warnings": [warning]}, seen
    diagnosis = diagnose_text(f"/home/user/venv/lib/python3.11/site-packages/lightning/fabric/strategies/fsdp.py:728: "
                              f"UserWarning: {warning}\n")
    assert any(f.rule == "checkpoint.fsdp-double-checkpoint" for f in diagnosis.findings), diagnosis
    source = tmp_path / "lightning_fsdp.py"
    source.write_text(
        "import torch\n"
        "from lightning.fabric import Fabric\n"
        "from lightning.fabric.strategies import FSDPStrategy\n"
        "from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper\n\n"
        "model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 4))\n"
        "model[0] = checkpoint_wrapper(model[0])\n"
        "fabric = Fabric(strategy=FSDPStrategy(activation_checkpointing_policy={torch.nn.Linear}))\n"
        "model = fabric.setup(model)\n")
    findings = [f for f in json.loads(_check(python, str(source)).stdout)["findings"]
                if f["rule"] == "checkpoint.fsdp-double-checkpoint"]
    assert [f["assumes"] for f in findings] == [[f"lightning {seen['lightning']}"]], findings
    assert warning in findings[0]["message"], findings


KV_CACHE = REPO / "tests" / "stack" / "evidence" / "kv_cache_wrapper.py"
KV_CASES = REPO / "tests" / "check" / "checkpoint.recompute-mismatch"


@pytest.mark.parametrize("column", sorted(COLUMNS))
def test_checkpoint_wrapper_kv_cache(column: str, tmp_path: Path) -> None:
    """transformers.checkpoint-wrapper-kv-cache: torch's checkpoint wrapper on a tiny Llama with the KV cache on
    fails in backward as the facts say (every attention and mask on one side of 5.14.0; after it, all but SDPA on an
    unpadded batch); the check cases really fail or train there, `rootrank diagnose` names the failure, `rootrank
    check --python` reports an error where the run always fails and a warning where it may run, and the safe fix
    (offered where the run always fails) gives code that trains."""
    _, versions = observe(column)
    python = interpreter(column)
    seen = _child(python, KV_CACHE.read_text())
    fails = value("transformers.checkpoint-wrapper-kv-cache", versions) == "fails"
    size = "RuntimeError: The size of tensor a (16) must match the size of tensor b (8) at non-singleton dimension 3"
    metadata = ("CheckpointError: torch.utils.checkpoint: Recomputed values for the following tensors have different "
                "metadata than during the forward pass.")
    assert seen == {"transformers": versions["transformers"], "sdpa-unpadded": metadata if fails else "ok",
                    "sdpa-padded": size, "eager-unpadded": size, "eager-padded": size}, seen
    for case in ("wrapper_use_cache_true", "wrapper_default_cache"):
        script = tmp_path / f"{case}.py"
        shutil.copy(KV_CASES / f"{case}.py", script)
        run = _run(python, script, tmp_path)
        findings = [f for f in json.loads(_check(python, str(script)).stdout)["findings"]
                    if f["rule"] == "checkpoint.recompute-mismatch"]
        assert [f["assumes"] for f in findings] == [[f"transformers {versions['transformers']}"]], findings
        if not fails:  # SDPA, unpadded: the case trains
            assert run.returncode == 0 and run.stdout.rstrip().endswith("done"), run.stderr[-3000:]
            assert [f["severity"] for f in findings] == ["warning"], findings
            continue
        assert run.returncode != 0 and metadata in run.stderr, run.stderr[-3000:]
        root = diagnose_text(run.stdout + run.stderr).root_cause
        assert root is not None and root.rule == "checkpoint.recompute-mismatch", run.stderr[-3000:]
        explicit = case == "wrapper_use_cache_true"
        assert [f["severity"] for f in findings] == ["error" if explicit else "warning"], findings
        if explicit:
            subprocess.run([sys.executable, "-m", "rootrank", "check", "--fix", "--python", str(python), str(script)],
                           capture_output=True, text=True, timeout=120, check=False)
            assert "use_cache=False" in script.read_text()
            rerun = _run(python, script, tmp_path)
            assert rerun.returncode == 0 and rerun.stdout.rstrip().endswith("done"), rerun.stderr[-3000:]
