# versions: transformers==5.24.0, trl==1.16.0, peft==0.21.2, torch==2.13.0
"""LoRA SFT with DeepSpeed ZeRO-3 and TRL's default checkpointing, no use_reentrant: TRL's forcing is lost."""
from peft import LoraConfig
from trl import SFTConfig, SFTTrainer

DS_ZERO3 = {"zero_optimization": {"stage": 3, "overlap_comm": True}, "train_micro_batch_size_per_gpu": "auto"}

args = SFTConfig(output_dir="out", deepspeed=DS_ZERO3, bf16=True)
trainer = SFTTrainer(model="Qwen/Qwen3-0.6B", args=args, train_dataset=None,
                     peft_config=LoraConfig(r=8, task_type="CAUSAL_LM"))

inline = SFTTrainer("Qwen/Qwen3-0.6B", SFTConfig(output_dir="out", deepspeed=DS_ZERO3, activation_checkpointing=True,
                                                 activation_checkpointing_kwargs={}),
                    peft_config=LoraConfig(r=8, task_type="CAUSAL_LM"))

# near misses: the mode is said (TRL's override of False reaches the Trainer), ZeRO-2, no PEFT
said = SFTTrainer("Qwen/Qwen3-0.6B", SFTConfig(output_dir="out", deepspeed=DS_ZERO3,
                                               activation_checkpointing_kwargs={"use_reentrant": False}),
                  peft_config=LoraConfig(r=8, task_type="CAUSAL_LM"))
zero2 = SFTTrainer("Qwen/Qwen3-0.6B", SFTConfig(output_dir="out", deepspeed={"zero_optimization": {"stage": 2}}),
                   peft_config=LoraConfig(r=8, task_type="CAUSAL_LM"))
full = SFTTrainer("Qwen/Qwen3-0.6B", SFTConfig(output_dir="out", deepspeed=DS_ZERO3))
