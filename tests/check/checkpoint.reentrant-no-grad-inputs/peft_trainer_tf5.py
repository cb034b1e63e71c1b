# versions: transformers==5.24.0, torch==2.13.0, peft==0.21.2
# near miss on transformers >= 5.0: it trains (tests/fixtures/logs/none--lora-trainer-transformers5240-deprecation-warnings)
"""LoRA fine-tuning of a tiny randomly initialised Llama with the Hugging Face Trainer and gradient
checkpointing, the way most LoRA scripts are written: get_peft_model, then
TrainingArguments(gradient_checkpointing=True), no gradient_checkpointing_kwargs, no
enable_input_require_grads(). CPU, no downloads."""
import tempfile

import torch
from peft import LoraConfig, get_peft_model
from transformers import LlamaConfig, LlamaForCausalLM, Trainer, TrainingArguments

torch.manual_seed(0)
config = LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                     num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=32)
model = LlamaForCausalLM(config)
model = get_peft_model(model, LoraConfig(r=4, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM"))


class Tokens(torch.utils.data.Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        ids = torch.randint(1, 64, (12,))
        return {"input_ids": ids, "labels": ids.clone()}


args = TrainingArguments(
    output_dir=tempfile.mkdtemp(),
    per_device_train_batch_size=4,
    max_steps=2,
    gradient_checkpointing=True,
    use_cpu=True,
    report_to=[],
    logging_steps=1,
    save_strategy="no",
)
Trainer(model=model, args=args, train_dataset=Tokens()).train()
print("done")
