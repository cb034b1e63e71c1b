"""near miss: TRL configs leave the kwargs to TRL's trainers, which pass use_reentrant=False and make a
PEFT model's inputs require grad themselves (trl trainer/dpo_trainer.py:694 and :860)."""
from peft import LoraConfig
from trl import DPOConfig, SFTConfig, SFTTrainer

args = SFTConfig(output_dir="out", gradient_checkpointing=True, report_to="none")
dpo = DPOConfig(output_dir="out", gradient_checkpointing=True)
trainer = SFTTrainer(model="Qwen/Qwen2-0.5B", args=args, peft_config=LoraConfig(r=8))
