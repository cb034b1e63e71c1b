# versions: transformers==5.24.0, torch==2.13.0, peft==0.21.2, trl==1.16.0
"""TRL's selective activation checkpointing in an SFTConfig (trl >= 1.15: SFTTrainer takes `selective` out and
its SAC wrapper runs non-reentrant; trl/trainer/sft_trainer.py:1083-1098, trl 1.16.0 wheel)."""
from trl import SFTConfig, SFTTrainer

# TRL refuses `selective` next to `use_reentrant=True` (its own ValueError).
bad = SFTConfig(output_dir="out", gradient_checkpointing_kwargs={"selective": True, "use_reentrant": True})

# Near misses: TRL's documented form, with checkpointing on by TRL's default; `use_reentrant=False` said.
sac = SFTConfig(output_dir="out", gradient_checkpointing_kwargs={"selective": True})
said = SFTConfig(output_dir="out", activation_checkpointing_kwargs={"selective": True, "use_reentrant": False})
SFTTrainer(model="m", args=sac).train()
