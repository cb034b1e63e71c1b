"""Lightning's FSDP activation-checkpointing policy on a model some of whose layers the script already wrapped in
`checkpoint_wrapper`: Lightning skips its policy and warns (lightning/fabric/strategies/fsdp.py:727-732, 2.6.6)."""
import lightning as L
from lightning.fabric.strategies import FSDPStrategy
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper

from model import Block, Model

model = Model()
model.blocks[0] = checkpoint_wrapper(model.blocks[0])
fabric = L.Fabric(strategy=FSDPStrategy(activation_checkpointing_policy={Block}))
model = fabric.setup_module(model)

# Near miss: no policy.
plain = FSDPStrategy(activation_checkpointing_policy=None)
