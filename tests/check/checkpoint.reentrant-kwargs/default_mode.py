"""Keyword arguments through a checkpoint whose mode is left to the (reentrant) default."""
from functools import partial

import torch.utils.checkpoint as cp

ckpt = partial(cp.checkpoint, preserve_rng_state=False)
ckpt_nr = partial(cp.checkpoint, use_reentrant=False)


def run(layer, hidden, mask, extra):
    hidden = cp.checkpoint(layer, hidden, mask=mask)
    hidden = ckpt(layer, hidden, mask=mask)
    # near misses: non-reentrant preset, and a splat whose content is unknown
    hidden = ckpt_nr(layer, hidden, mask=mask)
    return cp.checkpoint(layer, hidden, use_reentrant=True, **extra)
