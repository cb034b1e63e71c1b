# versions: transformers==5.24.0, torch==2.13.0, peft==0.21.2
# Twin of custom_model_tf5_new_names.py: the 5.23+ error wording is in the message.
import torch
from transformers import PretrainedConfig, PreTrainedModel, TrainingArguments


class TinyEncoder(PreTrainedModel):
    config_class = PretrainedConfig

    def __init__(self, config):
        super().__init__(config)
        self.proj = torch.nn.Linear(16, 16)


model = TinyEncoder(PretrainedConfig())
model.gradient_checkpointing_enable()
args = TrainingArguments("out", gradient_checkpointing=True)
