# versions: transformers==4.57.6, trl==0.26.0, peft==0.21.2, torch==2.13.0
# TRL before 0.27 leaves transformers 4.57 its reentrant default (use-reentrant-explicit); near miss for this
# folder: SFTTrainer makes the PEFT model's inputs require grad itself (topic trl.peft-input-grads).
from peft import LoraConfig, get_peft_model
from trl import SFTConfig, SFTTrainer

model = get_peft_model(model, LoraConfig(r=8, task_type="CAUSAL_LM"))
args = SFTConfig("out", gradient_checkpointing=True, gradient_checkpointing_kwargs={"use_reentrant": True})
SFTTrainer(model=model, args=args, train_dataset=data).train()
