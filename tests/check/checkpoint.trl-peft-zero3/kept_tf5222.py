# versions: transformers==5.22.2, trl==1.16.0, peft==0.21.2, torch==2.13.0
"""Near misses: the same (old names) on transformers 5.22.2, which reads the field TRL writes: the forcing holds."""
from peft import LoraConfig
from trl import SFTConfig, SFTTrainer

DS_ZERO3 = {"zero_optimization": {"stage": 3, "overlap_comm": True}, "train_micro_batch_size_per_gpu": "auto"}

args = SFTConfig(output_dir="out", deepspeed=DS_ZERO3, bf16=True)
trainer = SFTTrainer(model="Qwen/Qwen3-0.6B", args=args, train_dataset=None,
                     peft_config=LoraConfig(r=8, task_type="CAUSAL_LM"))

inline = SFTTrainer("Qwen/Qwen3-0.6B", SFTConfig(output_dir="out", deepspeed=DS_ZERO3, gradient_checkpointing=True,
                                                 gradient_checkpointing_kwargs={}),
                    peft_config=LoraConfig(r=8, task_type="CAUSAL_LM"))

# near misses: the mode is said (TRL's override of False reaches the Trainer), ZeRO-2, no PEFT
said = SFTTrainer("Qwen/Qwen3-0.6B", SFTConfig(output_dir="out", deepspeed=DS_ZERO3,
                                               gradient_checkpointing_kwargs={"use_reentrant": False}),
                  peft_config=LoraConfig(r=8, task_type="CAUSAL_LM"))
zero2 = SFTTrainer("Qwen/Qwen3-0.6B", SFTConfig(output_dir="out", deepspeed={"zero_optimization": {"stage": 2}}),
                   peft_config=LoraConfig(r=8, task_type="CAUSAL_LM"))
full = SFTTrainer("Qwen/Qwen3-0.6B", SFTConfig(output_dir="out", deepspeed=DS_ZERO3))
