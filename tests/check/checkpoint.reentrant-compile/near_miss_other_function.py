"""Near miss: the name `model` in two functions is two models. The shape of a test module (peft's GPU tests)
where one test enables reentrant checkpointing and another compiles its own model; and of a library helper
that checkpoints the model it builds, beside a method that compiles a module of its own. Neither compiled
model is checkpointed."""
import torch
from transformers import AutoModelForCausalLM


def test_checkpointed():
    model = AutoModelForCausalLM.from_pretrained("gpt2")
    model.gradient_checkpointing_enable()
    model(torch.ones(1, 4, dtype=torch.long)).logits.sum().backward()


def test_compiled():
    model = AutoModelForCausalLM.from_pretrained("gpt2")
    model = torch.compile(model, mode="reduce-overhead")
    model(torch.ones(1, 4, dtype=torch.long))


class Runner:
    def __init__(self):
        self.model = AutoModelForCausalLM.from_pretrained("gpt2")
        self.model.gradient_checkpointing_enable()


class Evaluator:
    def __init__(self):
        self.model = AutoModelForCausalLM.from_pretrained("gpt2")

    def compiled(self):
        return torch.compile(self.model)


class Trainer:
    def __init__(self):
        self.model = AutoModelForCausalLM.from_pretrained("gpt2")
        self.model.gradient_checkpointing_enable()

    def setup(self):
        # the same object: `self.model` belongs to the class, so this is still reported
        self.model = torch.compile(self.model)
