"""Stands in for a 4-rank torchrun job that is still running when rank 2 fails: steps, then the log of a
failed run (crash.log: rank 2 fails first), then it lingers as a job does while its ranks are torn down."""
import pathlib
import sys
import time

for step in range(8):
    print(f"step {step} loss {1 / (step + 1):.3f}", flush=True)
    time.sleep(0.5)
sys.stdout.write(pathlib.Path(__file__).with_name("crash.log").read_text(encoding="utf-8"))
sys.stdout.flush()
time.sleep(90)
sys.exit(1)
