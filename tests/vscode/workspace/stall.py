"""A job that makes progress, then stops (for rootrank watch in the integrated terminal)."""
import time

for step in range(10):
    print(f"step {step} loss {1 / (step + 1):.3f}", flush=True)
    time.sleep(0.2)
time.sleep(120)  # stuck here
