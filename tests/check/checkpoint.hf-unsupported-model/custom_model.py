"""A custom transformers model without supports_gradient_checkpointing."""
import torch.nn as nn
from transformers import PretrainedConfig, PreTrainedModel, TrainingArguments


class TinyConfig(PretrainedConfig):
    model_type = "tiny"


class TinyModel(PreTrainedModel):
    """Two linear layers."""

    config_class = TinyConfig

    def __init__(self, config):
        super().__init__(config)
        self.layers = nn.ModuleList([nn.Linear(8, 8) for _ in range(2)])


class ReadyModel(PreTrainedModel):
    config_class = TinyConfig
    supports_gradient_checkpointing = True


model = TinyModel.from_pretrained("out/tiny")
model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
args = TrainingArguments(output_dir="out", gradient_checkpointing=True,
                         gradient_checkpointing_kwargs={"use_reentrant": False})

# near miss: the class declares support
ready = ReadyModel(TinyConfig())
ready.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
