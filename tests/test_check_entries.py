"""Each failure entry's `check.example` is flagged by its rule, and its `check.use_instead` is not.

The entries show code fragments, so a common import prelude is put in front (the checks resolve names
through imports and stay silent on unknown names). A fragment whose finding depends on the installed versions
says which in a first line `# versions: transformers==4.57.6, torch==2.13.0` (as the golden cases do).
"""

from __future__ import annotations

import re

import pytest

from rootrank.check import CheckOptions, check_source
from rootrank.check.registry import RULES
from rootrank.library import Entry, load_library

PRELUDE = """\
import functools
import torch
import torch.nn as nn
import torch.nn.functional as F
from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (
    CheckpointImpl, apply_activation_checkpointing, checkpoint_wrapper)
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.checkpoint import checkpoint, checkpoint_sequential
from transformers import AutoModelForCausalLM, PreTrainedModel, TrainingArguments
"""
ENTRIES = [e for e in load_library() if e.id in RULES and e.check.get("example")]
_VERSIONS = re.compile(r"^#\s*versions:\s*(?P<pins>.+)$")


def _options(fragment: str) -> CheckOptions:
    match = _VERSIONS.match(fragment.lstrip().splitlines()[0] if fragment.strip() else "")
    if match is None:
        return CheckOptions()
    pins = (p.strip().split("==") for p in match.group("pins").split(","))
    return CheckOptions(versions=tuple(sorted((name.strip(), version.strip()) for name, version in pins)))


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.id)
def test_entry_example_is_flagged(entry: Entry) -> None:
    example = entry.check["example"]
    assert entry.id in {f.rule for f in check_source(PRELUDE + example, "example.py", _options(example))}


@pytest.mark.parametrize("entry", [e for e in ENTRIES if e.check.get("use_instead")], ids=lambda e: e.id)
def test_entry_use_instead_is_clean(entry: Entry) -> None:
    fixed = entry.check["use_instead"]
    options = _options(fixed if _VERSIONS.match(fixed.lstrip()) else entry.check.get("example", ""))
    assert entry.id not in {f.rule for f in check_source(PRELUDE + fixed, "fixed.py", options)}
