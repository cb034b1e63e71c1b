# versions: transformers==4.57.6, trl==1.16.0, peft==0.21.2, torch==2.13.0
# near miss: TRL >= 0.27 sets use_reentrant=False itself on transformers < 5 (trl sft_trainer.py:1079-1081).
from peft import LoraConfig, get_peft_model
from trl import SFTConfig, SFTTrainer

model = get_peft_model(model, LoraConfig(r=8, task_type="CAUSAL_LM"))
args = SFTConfig("out", gradient_checkpointing=True)
SFTTrainer(model=model, args=args, train_dataset=data).train()
