from transformers import AutoModelForCausalLM

model = AutoModelForCausalLM.from_pretrained("gpt2", use_cache=True)
model.config.use_cache = True
model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})


def sample(prompt_ids):
    # near miss: generation wants the cache
    return model.generate(prompt_ids, use_cache=True)
