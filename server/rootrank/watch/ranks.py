"""Which processes are the job's ranks, and which rank each one is.

A launcher (torchrun, deepspeed, accelerate, mpirun) starts one process per local rank and puts RANK /
LOCAL_RANK in its environment, so a rank is read from /proc/<pid>/environ; where that is not readable,
from the command line (`--local-rank=N`, `--local_rank N`). A rank's own children (data-loader workers)
inherit its environment and are left out: the topmost process with a given RANK is the rank. A job
without a launcher is its Python processes, numbered by pid order. Linux has /proc; elsewhere `ps` gives
the process tree and ranks come from command lines only.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from rootrank.watch.records import RankProcess

_ARG_RANK = re.compile(r"--local[-_]rank[= ](\d+)")
_PROC = Path("/proc")


def process_tree() -> dict[int, int]:
    """pid -> parent pid of every process this user can see."""
    parents: dict[int, int] = {}
    if _PROC.is_dir():
        for entry in os.scandir(_PROC):
            if not entry.name.isdigit():
                continue
            try:
                stat = Path(entry.path, "stat").read_text()
            except OSError:
                continue
            # The command name (field 2) may hold spaces and parentheses: fields follow its last ")".
            fields = stat[stat.rfind(")") + 2:].split()
            if len(fields) > 1:
                parents[int(entry.name)] = int(fields[1])
        return parents
    try:
        out = subprocess.run(["ps", "-A", "-o", "pid=,ppid="], capture_output=True, text=True, timeout=10,
                             check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return parents
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0].isdigit() and parts[1].isdigit():
            parents[int(parts[0])] = int(parts[1])
    return parents


def descendants(root: int, parents: dict[int, int] | None = None) -> list[int]:
    """`root` and every process below it, parents before children."""
    parents = process_tree() if parents is None else parents
    children: dict[int, list[int]] = {}
    for pid, parent in parents.items():
        children.setdefault(parent, []).append(pid)
    out: list[int] = []
    todo = [root]
    while todo:
        pid = todo.pop(0)
        out.append(pid)
        todo.extend(sorted(children.get(pid, ())))
    return out


def environment(pid: int) -> dict[str, str] | None:
    """The process's environment, None when it cannot be read (another user's process, macOS)."""
    try:
        data = Path(_PROC, str(pid), "environ").read_bytes()
    except OSError:
        return None
    env: dict[str, str] = {}
    for item in data.split(b"\0"):
        key, sep, value = item.partition(b"=")
        if sep:
            env[key.decode(errors="replace")] = value.decode(errors="replace")
    return env


def command_line(pid: int) -> str:
    try:
        return Path(_PROC, str(pid), "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        try:
            return subprocess.run(["ps", "-o", "command=", "-p", str(pid)], capture_output=True, text=True,
                                  timeout=10, check=False).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            return ""


def _int(value: str | None) -> int | None:
    return int(value) if value is not None and value.strip().isdigit() else None


def rank_processes(pids: list[int], parents: dict[int, int]) -> list[RankProcess]:
    """The ranks among `pids` (parents before children), ordered by rank."""
    found: dict[int, RankProcess] = {}
    rank_of: dict[int, int | None] = {}
    pythons: list[tuple[int, str]] = []
    for pid in pids:
        env = environment(pid)
        command = command_line(pid)
        rank = _int(env.get("RANK")) if env else None
        local = _int(env.get("LOCAL_RANK")) if env else None
        if local is None:
            match = _ARG_RANK.search(command)
            local = int(match[1]) if match else None
        if rank is None and env is None:
            rank = local
        rank_of[pid] = rank if rank is not None else local
        key = rank_of[pid]
        if key is not None:
            if rank_of.get(parents.get(pid, -1)) == key:
                continue  # a rank's own child (a data-loader worker) has its RANK too
            found.setdefault(key, RankProcess(pid, rank, local, command))
        elif "python" in Path(command.split(" ")[0]).name.lower() if command else False:
            pythons.append((pid, command))
    if found:
        return [found[k] for k in sorted(found)]
    # No launcher: the job's Python processes, the first of which is rank 0 (one process: one "rank").
    tops = [(pid, cmd) for pid, cmd in pythons if parents.get(pid) not in {p for p, _ in pythons}]
    return [RankProcess(pid, i if len(tops) > 1 else None, None, cmd) for i, (pid, cmd) in enumerate(tops)]


def ranks_of_job(root: int) -> list[RankProcess]:
    """The rank processes of the job started as `root` (the launcher, or the training script itself)."""
    parents = process_tree()
    return rank_processes(descendants(root, parents), parents)


def ranks_on_machine(pids: list[int] | None = None) -> list[RankProcess]:
    """The ranks under the given pids, or else every process here with a RANK and WORLD_SIZE in its
    environment (a job another shell started), when they are of one job."""
    parents = process_tree()
    if pids:
        out: list[RankProcess] = []
        for pid in pids:
            out.extend(rank_processes(descendants(pid, parents), parents))
        return out
    jobs: dict[tuple[str, str, str], list[int]] = {}
    for pid in sorted(parents):
        if pid == os.getpid():
            continue
        env = environment(pid)
        if env and "RANK" in env and "WORLD_SIZE" in env:
            key = (env.get("MASTER_ADDR", ""), env.get("MASTER_PORT", ""), env.get("TORCHELASTIC_RUN_ID", ""))
            jobs.setdefault(key, []).append(pid)
    if len(jobs) != 1:
        return []
    (members,) = jobs.values()
    ordered = [p for p in sorted(parents) if p in set(members)]
    return rank_processes(ordered, parents)
