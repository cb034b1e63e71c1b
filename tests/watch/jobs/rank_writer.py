"""Writes per-rank logs the way a job with per-rank files does, into the folder given: rank0.log and
rank1.log from the start, rank2.log created later, rank0.log rotated (renamed, a new one opened) half
way; at the end rank 1 raises a ValueError whose traceback goes to its file. One step every 0.1 s.
Then it prints "writer done" and lingers: the seconds given, or with "hold" until its stdin is closed."""
import os
import sys
import time
from pathlib import Path

logs = Path(sys.argv[1])
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 30
files = {r: (logs / f"rank{r}.log").open("a") for r in (0, 1)}
for step in range(steps):
    if step == steps // 3:
        files[2] = (logs / "rank2.log").open("a")  # a rank whose file appears after the watch began
    if step == steps // 2:
        files[0].close()
        os.rename(logs / "rank0.log", logs / "rank0.log.1")  # rotated away
        files[0] = (logs / "rank0.log").open("a")
        files[0].write("rotated: rank0.log reopened\n")
    for rank, handle in files.items():
        handle.write(f"[rank{rank}]: step {step} loss {1.0 / (step + 1):.4f}\n")
        handle.flush()
    time.sleep(0.1)
files[1].write(
    "[rank1]: Traceback (most recent call last):\n"
    '[rank1]:   File "/home/user/project/train.py", line 40, in <module>\n'
    "[rank1]:     main()\n"
    '[rank1]:   File "/home/user/project/train.py", line 31, in main\n'
    "[rank1]:     batch = load_batch(rank, step)\n"
    '[rank1]:   File "/home/user/project/train.py", line 12, in load_batch\n'
    '[rank1]:     raise ValueError(f"malformed record at index {index}")\n'
    "[rank1]: ValueError: malformed record at index 209\n")
files[1].flush()
print("writer done", flush=True)
if len(sys.argv) > 3 and sys.argv[3] == "hold":
    sys.stdin.read()  # stays alive, as a job whose ranks linger, until whoever started it closes our stdin
else:
    time.sleep(float(sys.argv[3]) if len(sys.argv) > 3 else 3)
