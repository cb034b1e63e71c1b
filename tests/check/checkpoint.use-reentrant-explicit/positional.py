"""The mode passed by position: never a finding, and never a fix that would bind an argument twice
(`TypeError: got multiple values for argument`)."""
import torch
from torch.utils.checkpoint import checkpoint_sequential


def enable(model, gradient_checkpointing_kwargs):
    # near miss: the kwargs are the first positional parameter of gradient_checkpointing_enable
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs)


def enable_literal(model):
    model.gradient_checkpointing_enable({"use_reentrant": False})  # near miss: non-reentrant, by position


def run(seq, x):
    return checkpoint_sequential(seq, 2, x, False)  # near miss: the fourth parameter is use_reentrant


def run_spread(seq, x, *rest):
    return checkpoint_sequential(seq, 2, *rest)  # near miss: `*rest` may carry use_reentrant


def run_kwargs(seq, x, **kw):
    return checkpoint_sequential(seq, 2, x, **kw)  # near miss: `**kw` may carry use_reentrant


def run_missing(seq, x):
    return checkpoint_sequential(seq, 2, x)  # violation: three positional arguments, no use_reentrant
