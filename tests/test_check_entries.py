"""Each failure entry's `check.example` is flagged by its rule, and its `check.use_instead` is not.

The entries show code fragments, so a common import prelude is put in front (the checks resolve names
through imports and stay silent on unknown names).
"""

from __future__ import annotations

import pytest

from rootrank.check import check_source
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


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.id)
def test_entry_example_is_flagged(entry: Entry) -> None:
    assert entry.id in {f.rule for f in check_source(PRELUDE + entry.check["example"], "example.py")}


@pytest.mark.parametrize("entry", [e for e in ENTRIES if e.check.get("use_instead")], ids=lambda e: e.id)
def test_entry_use_instead_is_clean(entry: Entry) -> None:
    assert entry.id not in {f.rule for f in check_source(PRELUDE + entry.check["use_instead"], "fixed.py")}
