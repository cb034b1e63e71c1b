from fairscale.nn import FullyShardedDataParallel as FSDP
from fairscale.nn import checkpoint_wrapper


def build(layers):
    wrapped = [checkpoint_wrapper(FSDP(layer)) for layer in layers]  # flagged (fairscale#777)
    good = [FSDP(checkpoint_wrapper(layer)) for layer in layers]  # near miss: recommended order
    return wrapped, good
