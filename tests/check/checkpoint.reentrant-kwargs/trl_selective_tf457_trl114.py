# versions: transformers==4.57.6, torch==2.13.0, peft==0.21.2, trl==1.14.2
"""Near miss: TRL 1.14 on transformers 4.57 sets `use_reentrant=False` itself when the dict leaves it out
(trl.non-reentrant-on-transformers-4), so `selective` reaches a non-reentrant checkpoint (no error; no SAC either)."""
from trl import SFTConfig

sac = SFTConfig(output_dir="out", gradient_checkpointing_kwargs={"selective": True})
