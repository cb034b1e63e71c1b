"""Taking every rank's Python stack with py-spy, and naming the odd one out.

A hung distributed job looks like this from inside: every rank but one waits in the same collective
(all_reduce, barrier, a DDP bucket's backward), and one rank is somewhere else: sleeping, loading data,
in a deadlock, in a longer code path. The rank whose main thread is not where the others wait is the
one to look at, and its innermost frame in the job's own code is the line to read.

py-spy is an optional dependency (`pip install 'rootrank[watch]'`); without it, or where ptrace is not
permitted, the report says so and what to do.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rootrank.watch.records import Frame, RankProcess, RankStack

DUMP_TIMEOUT = 30.0
MISSING = "py-spy is not installed, so the ranks' stacks cannot be taken (pip install 'rootrank[watch]')"
PTRACE_HINT = ("py-spy may not attach to the job's processes: ptrace is not permitted here (run rootrank as "
               "the job's user or root; on Linux `sudo sysctl kernel.yama.ptrace_scope=0`; in a container "
               "start it with --cap-add SYS_PTRACE; on macOS run with sudo)")
# `    all_reduce (torch/distributed/distributed_c10d.py:3252)`
# `    train_step (train.py:15)`: the file is the last parenthesised `path:line` (linear: no two open repeats)
_FRAME = re.compile(r"^\s+(?P<function>\S.*) \((?P<file>[^()]+):(?P<line>\d+)\)[ \t]*$")
# `Thread 4242 (idle): "MainThread"`; a process that never imported threading has no thread names.
_THREAD = re.compile(r'^Thread (?P<id>\S+) \((?P<state>[^)]*)\)(?:: "(?P<name>[^"]*)")?')
_DENIED = re.compile(r"permission denied|operation not permitted|ptrace", re.IGNORECASE)
# Calls of torch.distributed that wait for the other ranks.
COLLECTIVES = frozenset({
    "all_reduce", "all_reduce_coalesced", "all_gather", "all_gather_into_tensor", "all_gather_object",
    "all_gather_coalesced", "reduce_scatter", "reduce_scatter_tensor", "all_to_all", "all_to_all_single",
    "broadcast", "broadcast_object_list", "barrier", "monitored_barrier", "gather", "gather_object",
    "scatter", "scatter_object_list", "reduce", "send", "recv", "isend", "irecv", "batch_isend_irecv",
    "wait", "_wait", "new_group", "init_process_group", "destroy_process_group", "_store_based_barrier",
})
_LIBRARY_ROOTS = frozenset({
    "torch", "torchvision", "torchaudio", "transformers", "accelerate", "deepspeed", "lightning",
    "pytorch_lightning", "megatron", "apex", "triton", "numpy", "datasets", "peft", "trl", "fairscale",
    "torchtitan", "torchelastic", "ray", "tqdm", "wandb", "safetensors", "tokenizers", "_pytest",
})


def find_pyspy() -> str | None:
    """py-spy on PATH, or beside this interpreter (a virtual environment that was not activated)."""
    found = shutil.which("py-spy")
    if found:
        return found
    beside = Path(sys.executable).parent / ("py-spy.exe" if os.name == "nt" else "py-spy")
    return str(beside) if beside.is_file() and os.access(beside, os.X_OK) else None


def parse_dump(text: str) -> list[tuple[str, tuple[Frame, ...]]]:
    """(thread name, frames innermost first) for each thread of a `py-spy dump`."""
    threads: list[tuple[str, list[Frame]]] = []
    for line in text.splitlines():
        head = _THREAD.match(line)
        if head:
            threads.append((head["name"] or "", []))
            continue
        frame = _FRAME.match(line)
        if frame and threads:
            threads[-1][1].append(Frame(frame["function"], frame["file"], int(frame["line"])))
    return [(name, tuple(frames)) for name, frames in threads]


def is_library(path: str) -> bool:
    """A frame of an installed library or the standard library, not of the job's own code."""
    if "site-packages" in path or "dist-packages" in path or path.startswith("<"):
        return True
    parts = Path(path).parts
    if not parts:
        return False
    if re.search(r"[/\\]lib[/\\]python3\.\d+[/\\]", path):
        return True
    root = parts[0] if not Path(path).is_absolute() else ""
    if not root:
        return False
    name = root[:-3] if root.endswith(".py") else root
    return name in _LIBRARY_ROOTS or (len(parts) == 1 and name in sys.stdlib_module_names) or (
        len(parts) > 1 and name in sys.stdlib_module_names)


def stack_of(process: RankProcess, threads: Sequence[tuple[str, tuple[Frame, ...]]]) -> RankStack:
    """The rank's main thread, the collective it waits in, its innermost frame in the job's code."""
    main = next((frames for name, frames in threads if name == "MainThread"), None)
    if main is None:
        main = threads[0][1] if threads else ()
    collective = ""
    for frame in main:
        if "distributed" in frame.file and frame.function in COLLECTIVES:
            collective = frame.function
            break
    user = next((f for f in main if not is_library(f.file)), None)
    return RankStack(process, main, collective=collective, user_frame=user)


def dump_stacks(processes: Iterable[RankProcess], pyspy: str | None = None,
                timeout: float = DUMP_TIMEOUT) -> tuple[list[RankStack], str, str]:
    """Every rank's stack, taken in parallel; the raw dumps (for the stacks file); a problem line when
    no stack could be taken at all (py-spy missing, ptrace refused)."""
    processes = list(processes)
    pyspy = pyspy or find_pyspy()
    if pyspy is None:
        return [RankStack(p, error="py-spy not installed") for p in processes], "", MISSING
    if not processes:
        return [], "", "no process of the job was found to take stacks of"

    def one(process: RankProcess) -> tuple[RankStack, str]:
        try:
            done = subprocess.run([pyspy, "dump", "--pid", str(process.pid)], capture_output=True, text=True,
                                  timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            return RankStack(process, error=f"py-spy dump did not answer within {timeout:.0f} s"), ""
        except OSError as exc:
            return RankStack(process, error=f"py-spy could not run: {exc}"), ""
        if done.returncode != 0:
            message = (done.stderr or done.stdout).strip().splitlines()
            return RankStack(process, error=message[-1] if message else f"py-spy exit {done.returncode}"), \
                done.stderr
        return stack_of(process, parse_dump(done.stdout)), done.stdout

    with ThreadPoolExecutor(max_workers=min(16, len(processes))) as pool:
        results = list(pool.map(one, processes))
    stacks = [s for s, _ in results]
    raw = "\n".join(f"===== {s.label} (pid {s.process.pid}) =====\n{text or s.error}\n" for s, text in results)
    problem = ""
    if all(s.error for s in stacks):
        problem = PTRACE_HINT if any(_DENIED.search(s.error) for s in stacks) else \
            f"py-spy could not take any stack: {stacks[0].error}"
    return stacks, raw, problem


def odd_ones_out(stacks: Sequence[RankStack]) -> tuple[list[RankStack], list[RankStack], str]:
    """(the odd ranks, the waiting ranks, where those wait). The waiting place is the collective most
    ranks are in, with the job's line that called it; the odd ranks are the ones elsewhere. Without a
    collective, the place most ranks share; with no majority, nobody is named."""
    taken = [s for s in stacks if not s.error and s.frames]
    if len(taken) == 1:
        return taken, [], ""  # one process: where it is is the answer
    if not taken:
        return [], [], ""
    places = Counter(_place(s) for s in taken)
    in_collective = [p for p in places if p[0]]
    if in_collective:
        waiting_place = max(in_collective, key=lambda p: places[p])
    else:
        waiting_place, count = places.most_common(1)[0]
        if count * 2 <= len(taken):
            return [], [], ""
    waiting = [s for s in taken if _place(s) == waiting_place]
    odd = [s for s in taken if _place(s) != waiting_place]
    collective, user = waiting_place
    where = f"{collective} at {user}" if collective and user else collective or user
    return odd, waiting, where


def _place(stack: RankStack) -> tuple[str, str]:
    return stack.collective, stack.user_frame.where if stack.user_frame else ""


def verdict(odd: Sequence[RankStack], waiting: Sequence[RankStack], waiting_in: str) -> str:
    """One sentence for the report and the editor's status bar."""
    if not odd and waiting:
        return (f"every rank seen waits in {waiting_in}: the rank that hangs is not among the processes "
                "on this machine (look at the other nodes)")
    if not odd:
        return "the stacks do not tell one rank apart"
    if not waiting:
        return ", ".join(_where(s, "") for s in odd)
    names = ", ".join(_where(s, "is not in the collective: it ") for s in odd)
    others = ", ".join(s.label.replace("rank ", "") for s in waiting)
    return f"{names}; rank(s) {others} wait in {waiting_in}"


def _where(stack: RankStack, lead: str) -> str:
    frame = stack.user_frame or (stack.frames[0] if stack.frames else None)
    if frame is None:
        return f"{stack.label} is elsewhere"
    return f"{stack.label} {lead}is at {frame.where} in {frame.function}"


def stacks_text(stacks: Sequence[RankStack]) -> str:
    """The stacks file: every rank's main thread, innermost frame first."""
    out = []
    for stack in stacks:
        out.append(f"{stack.label} (pid {stack.process.pid}) {stack.process.command}".rstrip())
        if stack.error:
            out.append(f"    (no stack: {stack.error})")
        out.extend(f"    {f.function} ({f.where})" for f in stack.frames)
        out.append("")
    return "\n".join(out)
