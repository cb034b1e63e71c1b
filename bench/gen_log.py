#!/usr/bin/env python3
"""Deterministic generator of large, realistic multi-rank PyTorch training logs for benchmarks.

    python bench/gen_log.py bench/out/job.log --size 1GiB --ranks 1024 --prefix rank --fail-rank 137

The file is: a torchrun/NCCL start-up header (banner, per-rank NCCL INFO init lines, tokenizer
warnings, the torch.utils.checkpoint use_reentrant UserWarning + `  warnings.warn(`), then training
steps until the size target (every rank logs a status line per step; rank 0 also rewrites a tqdm
bar with `\\r`, prints an HF-style loss dict and an ANSI-coloured loguru line; glog-stamped c10d
warnings here and there), and at the very end the planted failure: a CUDA OOM traceback on
`--fail-rank`, then the collateral cascade in time order: its node's torchrun agent SIGTERMs the
node-mates (`Sending process P closing signal SIGTERM`, `failed (exitcode: 1) local_rank: K (pid: P)`,
the elastic ChildFailedError table); ten minutes later the NCCL watchdog timeout, with its C++ stack
and `terminate called ...`, on every rank of the other nodes, and their agents' reports (exitcode -6).
srun/mpirun styles (every rank a task, no agent) time out on every other rank and end with those
launchers' own reports instead.

Speed: a few step templates are formatted once (with markers for step number and clock) and then
replayed with `bytes.join`, so the writer streams at hundreds of MB/s in constant memory. The same
`--seed` and options always give byte-identical output. Message texts are copied from real logs
(tests/fixtures/logs, the shared corpus).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import re
import sys
import time

GEN_VERSION = 2  # bump when the output changes, so bench_diagnose.py regenerates cached logs
PREFIX_STYLES = ("rank", "default", "srun", "mpirun", "pdsh", "none")
RANKS_PER_HOST = 8
START = dt.datetime(2026, 11, 29, 21, 3, 7, 114000)
STEP_SECONDS = 1.37
TOTAL_STEPS = 250000  # what the progress bar says the run would have taken
NCCL_TIMEOUT_MS = 600000
SITE = "/opt/conda/lib/python3.11/site-packages"
BINARY = "/opt/conda/bin/python3.11"
TEMPLATE_BYTES = 256 * 1024  # each replayed block is at least this big
VARIANTS = 8  # distinct step templates (different losses, warnings); replayed round-robin

_UNITS = {"": 1, "B": 1, "K": 1000, "KB": 1000, "M": 1000**2, "MB": 1000**2, "G": 1000**3, "GB": 1000**3,
          "KIB": 1024, "MIB": 1024**2, "GIB": 1024**3, "TIB": 1024**4}


def parse_size(text: str) -> int:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*", text)
    if not m or m.group(2).upper() not in _UNITS:
        raise argparse.ArgumentTypeError(f"bad size {text!r} (e.g. 20MiB, 1GiB, 500MB)")
    return int(float(m.group(1)) * _UNITS[m.group(2).upper()])


def host_of(rank: int) -> str:
    return f"node-{rank // RANKS_PER_HOST:03d}"


class Style:
    """Launcher prefix of worker lines and of launcher (agent) lines."""

    def __init__(self, name: str) -> None:
        self.name = name

    def worker(self, rank: int) -> str:
        n = self.name
        if n == "rank":
            return f"[rank{rank}]: "
        if n == "default":
            return f"[default{rank % RANKS_PER_HOST}]:[rank{rank}]: "
        if n == "srun":
            return f"{rank}: "
        if n == "mpirun":
            return f"[1,{rank}]<stderr>:"
        if n == "pdsh":
            return f"{host_of(rank)}: "
        return ""

    def glued(self, rank: int) -> str:
        """Prefix in front of a bracketed glog header: torch writes "[rank5]:[E1129 ..." without a space."""
        return self.worker(rank).rstrip(" ") if self.name in ("rank", "default") else self.worker(rank)

    def agent(self, node: int) -> str:
        return f"node-{node:03d}: " if self.name == "pdsh" else ""


# --------------------------------------------------------------------------------------------- text


def glog_stamp(t: dt.datetime) -> str:
    return t.strftime("%m%d %H:%M:%S.") + f"{t.microsecond:06d}"


def use_reentrant_warning() -> list[str]:
    return [f"{SITE}/torch/utils/checkpoint.py:464: UserWarning: torch.utils.checkpoint: the use_reentrant "
            "parameter should be passed explicitly. In version 2.5 we will raise an exception if use_reentrant "
            "is not passed. use_reentrant=False is recommended, but if you need to preserve the current default "
            "behavior, you can pass use_reentrant=True. Refer to docs for more details on the differences "
            "between the two variants.",
            "  warnings.warn("]


TOKENIZERS_FORK = [
    "huggingface/tokenizers: The current process just got forked, after parallelism has already been used. "
    "Disabling parallelism to avoid deadlocks...",
    "To disable this warning, you can either:",
    "\t- Avoid using `tokenizers` before the fork if possible",
    "\t- Explicitly set the environment variable TOKENIZERS_PARALLELISM=(true | false)",
]
TOKENIZER_LENGTH = ("Token indices sequence length is longer than the specified maximum sequence length for this "
                    "model (4711 > 4096). Running this sequence through the model will result in indexing errors")


def header(style: Style, ranks: int, rng: random.Random, pids: list[int]) -> list[str]:
    out: list[str] = []
    nodes = max(1, (ranks + RANKS_PER_HOST - 1) // RANKS_PER_HOST)
    t = START
    for node in range(nodes if style.name not in ("srun", "mpirun") else 0):
        a = style.agent(node)
        stamp = f"W{glog_stamp(t)} {agent_pid(node)} torch/distributed/run.py:793] "
        out += [a + stamp, a + stamp + "*" * 41,
                a + stamp + "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to "
                "avoid your system being overloaded, please further tune the variable for optimal performance in "
                "your application as needed. ",
                a + stamp + "*" * 41]
    for r in range(ranks):
        p = style.worker(r)
        host, local = host_of(r), r % RANKS_PER_HOST
        pid = pids[r]
        out.append(f"{p}{host}:{pid}:{pid} [{local}] NCCL INFO cudaDriverVersion 12040")
        out.append(f"{p}{host}:{pid}:{pid + 811} [{local}] NCCL INFO comm 0x{rng.getrandbits(44):x} rank {r} "
                   f"nranks {ranks} cudaDev {local} nvmlDev {local} busId {0x18 + 0x10 * local:x}000 commId "
                   f"0x{rng.getrandbits(64):x} - Init COMPLETE")
    for r in range(ranks):
        p = style.worker(r)
        out += [p + line for line in TOKENIZERS_FORK]
        out += [p + line for line in use_reentrant_warning()]
    out.append(style.worker(0) + f"world size {ranks}, 6738415616 params, gradient checkpointing on")
    return out


def agent_pid(node: int) -> int:
    return 14686 + 97 * node


# ----------------------------------------------------------------------------------------- templates

_MARK = re.compile(rb"\x00([A-Z])(\d+)\x00")


def mark(kind: str, k: int) -> str:
    """A placeholder: S = step number, G = glog clock ("1129 23:35:14.945000"), L = logging clock."""
    return f"\x00{kind}{k}\x00"


class Template:
    """Text with markers, pre-split so that rendering is one list fill and one bytes.join."""

    def __init__(self, text: str, steps: int) -> None:
        pieces = _MARK.split(text.encode("utf-8"))
        # pieces: literal, kind, k, literal, kind, k, ..., literal
        self.literals = pieces[0::3]
        self.keys = [(pieces[i], int(pieces[i + 1])) for i in range(1, len(pieces), 3)]
        self.unique = sorted(set(self.keys))
        self.steps = steps
        self.parts: list[bytes] = [b""] * (2 * len(self.literals) - 1)
        self.parts[0::2] = self.literals

    def render(self, base_step: int) -> bytes:
        values: dict[tuple[bytes, int], bytes] = {}
        for kind, k in self.unique:
            step = base_step + k
            if kind == b"S":
                values[(kind, k)] = b"%d" % step
            else:
                t = START + dt.timedelta(seconds=step * STEP_SECONDS + 0.000731 * k)
                values[(kind, k)] = (glog_stamp(t) if kind == b"G"
                                     else t.strftime("%Y-%m-%d %H:%M:%S,") + f"{t.microsecond // 1000:03d}").encode()
        parts = self.parts
        parts[1::2] = [values[key] for key in self.keys]
        return b"".join(parts)


def step_lines(style: Style, ranks: int, k: int, rng: random.Random, variant: int, total_steps: int) -> list[str]:
    """Everything printed during one training step (step number = base + k)."""
    step_m, glog_m, log_m = mark("S", k), mark("G", k), mark("L", k)
    lines: list[str] = []
    p0 = style.worker(0)
    # rank 0: a tqdm bar rewritten with \r four times on one physical line, then an HF loss dict.
    bar = []
    pct = 3 + variant  # the bar advances a little from one replayed template to the next
    filled = pct * 30 // 100
    for j in range(4):  # four refreshes of the same iteration, with a changing rate
        bar.append(f"\r{pct:3d}%|{'█' * filled}{' ' * (30 - filled)}| {step_m}/{total_steps} "
                   f"[{1 + variant}:{(j * 7) % 60:02d}:{(j * 13) % 60:02d}<41:12:0{j}, {1.3 + 0.01 * j:.2f}s/it]")
    lines.append(p0 + "".join(bar))
    loss = 2.9 * (0.97 ** (variant + 1)) + rng.random() * 0.05
    grad_norm, lr = 0.3 + rng.random(), 9.6e-05 - rng.random() * 1e-6
    lines.append(p0 + f"{{'loss': {loss:.4f}, 'grad_norm': {grad_norm!r}, 'learning_rate': {lr!r}, "
                 f"'epoch': 0.{10 + variant}}}")
    lines.append(p0 + f"\x1b[32m{log_m}\x1b[0m | \x1b[1mINFO    \x1b[0m | \x1b[36mtrainer\x1b[0m:\x1b[36mlog\x1b[0m:"
                 f"\x1b[36m212\x1b[0m - \x1b[1mstep {step_m}: loss={loss:.4f} tokens/s={412000 + rng.randrange(9000)}\x1b[0m")
    for r in range(ranks):
        lines.append(style.worker(r) + f"[{log_m}] [INFO] [train.py:288:train_step] step {step_m} | rank {r} | "
                     f"loss {loss + rng.random() * 0.2:.4f} | grad_norm {0.3 + rng.random():.4f} | lr 9.6000e-05 | "
                     f"tokens/s {3100 + rng.random() * 400:.1f} | mem {61 + rng.random() * 9:.2f} GiB")
    # glog-stamped c10d / allocator warnings from a few ranks
    for r in rng.sample(range(ranks), min(ranks, 3)):
        lines.append(style.glued(r) + f"[W{glog_m} CUDAAllocatorConfig.h:28] Warning: expandable_segments not supported "
                     "on this platform (function operator())")
    if variant % 4 == 0 and k == 0:  # dataloader workers re-forked at an epoch boundary
        for r in rng.sample(range(ranks), min(ranks, 4)):
            p = style.worker(r)
            lines += [p + line for line in TOKENIZERS_FORK] + [p + TOKENIZER_LENGTH]
            lines += [p + line for line in use_reentrant_warning()]
    return lines


def build_templates(style: Style, ranks: int, rng: random.Random, total_steps: int) -> list[Template]:
    probe = "\n".join(step_lines(style, ranks, 0, random.Random(0), 1, total_steps)) + "\n"
    per_step = max(1, len(probe.encode()))
    steps = max(1, -(-TEMPLATE_BYTES // per_step))
    out = []
    for v in range(VARIANTS):
        lines: list[str] = []
        for k in range(steps):
            lines += step_lines(style, ranks, k, rng, v, total_steps)
        out.append(Template("\n".join(lines) + "\n", steps))
    return out


# --------------------------------------------------------------------------------------------- tail


def oom_traceback(rank: int) -> list[str]:
    local = rank % RANKS_PER_HOST
    return [
        "Traceback (most recent call last):",
        '  File "/workspace/train.py", line 412, in <module>',
        "    main()",
        '  File "/workspace/train.py", line 398, in main',
        "    trainer.train()",
        f'  File "{SITE}/transformers/trainer.py", line 2123, in train',
        "    return inner_training_loop(",
        "           ^^^^^^^^^^^^^^^^^^^^",
        f'  File "{SITE}/transformers/trainer.py", line 2481, in _inner_training_loop',
        "    tr_loss_step = self.training_step(model, inputs, num_items_in_batch)",
        "                   ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{SITE}/transformers/trainer.py", line 3612, in training_step',
        "    self.accelerator.backward(loss, **kwargs)",
        f'  File "{SITE}/accelerate/accelerator.py", line 2246, in backward',
        "    loss.backward(**kwargs)",
        f'  File "{SITE}/torch/_tensor.py", line 581, in backward',
        "    torch.autograd.backward(",
        f'  File "{SITE}/torch/autograd/__init__.py", line 347, in backward',
        "    _engine_run_backward(",
        f'  File "{SITE}/torch/autograd/graph.py", line 825, in _engine_run_backward',
        "    return Variable._execution_engine.run_backward(  # Calls into the C++ engine to run the backward pass",
        "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.91 GiB. GPU {local} has a total capacity of "
        "79.15 GiB of which 2.12 GiB is free. Including non-PyTorch memory, this process has 77.02 GiB memory in use. "
        "Of the allocated memory 71.34 GiB is allocated by PyTorch, and 4.48 GiB is reserved by PyTorch but "
        "unallocated. If reserved but unallocated memory is large try setting "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory "
        "Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)",
    ]


def watchdog_lines(rank: int, seq: int, numel: int, t: dt.datetime, ran_ms: int) -> list[str]:
    g = glog_stamp(t)
    work = (f"WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn={numel}, NumelOut={numel}, "
            f"Timeout(ms)={NCCL_TIMEOUT_MS}) ran for {ran_ms} milliseconds before timing out.")
    pg = f"[PG ID 0 PG GUID 0(default_pg) Rank {rank}]"
    lib = f"{SITE}/torch/lib"
    frames = [
        f"frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f3c9b36c446 in {lib}/libc10.so)",
        "frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration<long, "
        f"std::ratio<1l, 1000l> > >) + 0x282 (0x7f3c9c67f772 in {lib}/libtorch_cuda.so)",
        f"frame #2: c10d::ProcessGroupNCCL::watchdogHandler() + 0x233 (0x7f3c9c686bb3 in {lib}/libtorch_cuda.so)",
        f"frame #3: c10d::ProcessGroupNCCL::ncclCommWatchdog() + 0x14d (0x7f3c9c68861d in {lib}/libtorch_cuda.so)",
        f"frame #4: <unknown function> + 0x145c0 (0x7f3ce8c3c5c0 in {lib}/libtorch.so)",
        "frame #5: <unknown function> + 0x94ac3 (0x7f3ce9fe1ac3 in /lib/x86_64-linux-gnu/libc.so.6)",
        "frame #6: <unknown function> + 0x126850 (0x7f3cea073850 in /lib/x86_64-linux-gnu/libc.so.6)",
        "",
    ]
    return [
        f"[E{g} ProcessGroupNCCL.cpp:632] [Rank {rank}] Watchdog caught collective operation timeout: {work}",
        f"[E{g} ProcessGroupNCCL.cpp:2168] {pg} failure detected by watchdog at work sequence id: {seq} PG status: "
        f"last enqueued work: {seq}, last completed work: {seq - 1}",
        f"[E{g} ProcessGroupNCCL.cpp:670] Stack trace of the failed collective not found, potentially because "
        "FlightRecorder is disabled. You can enable it by setting TORCH_NCCL_TRACE_BUFFER_SIZE to a non-zero value.",
        f"[E{g} ProcessGroupNCCL.cpp:684] [Rank {rank}] Some NCCL operations have failed or timed out. Due to the "
        "asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.",
        f"[E{g} ProcessGroupNCCL.cpp:698] [Rank {rank}] To avoid data inconsistency, we are taking the entire process "
        "down.",
        f"[E{g} ProcessGroupNCCL.cpp:1899] {pg} Process group watchdog thread terminated with exception: "
        f"[Rank {rank}] Watchdog caught collective operation timeout: {work}",
        "Exception raised from checkTimeout at /opt/pytorch/pytorch/torch/csrc/distributed/c10d/"
        "ProcessGroupNCCL.cpp:635 (most recent call first):",
        *frames,
        "terminate called after throwing an instance of 'c10::DistBackendError'",
        f"  what():  {pg} Process group watchdog thread terminated with exception: [Rank {rank}] Watchdog caught "
        f"collective operation timeout: {work}",
    ]


def elastic_table(node: int, members: list[tuple[int, int, int, int]], root: tuple[int, int, int, int],
                  when: dt.datetime) -> list[str]:
    """members/root: (rank, local_rank, exitcode, pid)."""
    stamp = when.strftime("%Y-%m-%d_%H:%M:%S")
    host = f"node-{node:03d}"

    def entry(i: int, m: tuple[int, int, int, int]) -> list[str]:
        rank, local, code, pid = m
        if code == -15:
            ec, tb = f"  exitcode  : -15 (pid: {pid})  (SIGTERM)", f"Signal 15 (SIGTERM) received by PID {pid}"
        elif code == -6:
            ec, tb = f"  exitcode  : -6 (pid: {pid})  (SIGABRT)", f"Signal 6 (SIGABRT) received by PID {pid}"
        else:
            ec, tb = (f"  exitcode  : {code} (pid: {pid}) ",
                      "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html")
        return [f"[{i}]:", f"  time      : {stamp}", f"  host      : {host}",
                f"  rank      : {rank} (local_rank: {local})", ec, "  error_file: <N/A>", f"  traceback : {tb}"]

    lines = [
        "Traceback (most recent call last):",
        '  File "/opt/conda/bin/torchrun", line 8, in <module>',
        "    sys.exit(main())",
        "             ^^^^^^",
        f'  File "{SITE}/torch/distributed/elastic/multiprocessing/errors/__init__.py", line 355, in wrapper',
        "    return f(*args, **kwargs)",
        "           ^^^^^^^^^^^^^^^^^^",
        f'  File "{SITE}/torch/distributed/run.py", line 919, in main',
        "    run(args)",
        f'  File "{SITE}/torch/distributed/run.py", line 910, in run',
        "    elastic_launch(",
        f'  File "{SITE}/torch/distributed/launcher/api.py", line 138, in __call__',
        "    return launch_agent(self._config, self._entrypoint, list(args))",
        "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{SITE}/torch/distributed/launcher/api.py", line 269, in launch_agent',
        "    raise ChildFailedError(",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "=" * 60, "train.py FAILED", "-" * 60, "Failures:",
    ]
    others = [m for m in members if m[0] != root[0]]
    if not others:
        lines.append("  <NO_OTHER_FAILURES>")
    for i, m in enumerate(others, start=1):
        lines += entry(i, m)
    lines += ["-" * 60, "Root Cause (first observed failure):", *entry(0, root), "=" * 60]
    return lines


def agent_report(style: Style, ranks: int, node: int, first: int, code: int, when: dt.datetime,
                 pids: list[int]) -> list[str]:
    """One node's torchrun agent after its first worker failed: SIGTERMs, `failed (...)`, the table."""
    a = style.agent(node)
    apid = agent_pid(node)
    members = list(range(node * RANKS_PER_HOST, min(ranks, (node + 1) * RANKS_PER_HOST)))
    out: list[str] = []
    g = glog_stamp(when + dt.timedelta(milliseconds=12))
    for r in members:
        if r != first:
            out.append(f"{a}W{g} {apid} {SITE}/torch/distributed/elastic/multiprocessing/api.py:897] Sending "
                       f"process {pids[r]} closing signal SIGTERM")
    g = glog_stamp(when + dt.timedelta(milliseconds=941))
    out.append(f"{a}E{g} {apid} {SITE}/torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: "
               f"{code}) local_rank: {first % RANKS_PER_HOST} (pid: {pids[first]}) of binary: {BINARY}")
    table_members = [(r, r % RANKS_PER_HOST, code if r == first else -15, pids[r]) for r in members]
    root = (first, first % RANKS_PER_HOST, code, pids[first])
    out += [a + line for line in elastic_table(node, table_members, root, when + dt.timedelta(seconds=1))]
    return out


def tail(style: Style, ranks: int, fail_rank: int, last_step: int, rng: random.Random, pids: list[int]) -> list[str]:
    """The planted failure and its cascade, in time order.

    torchrun styles (one agent per 8-rank node): the OOM traceback; at once the failing node's agent
    SIGTERMs the node-mates and prints its ChildFailedError table (root cause: the OOM rank, exitcode 1);
    ten minutes later the NCCL watchdog fires on every rank of the other nodes (they wait in the next
    all-reduce), aborting them (SIGABRT), and each of those agents reports its first failure (exitcode -6).
    srun/mpirun styles (every rank a task, no agent): every other rank times out, then the launcher reports.
    """
    out: list[str] = []
    t_fail = START + dt.timedelta(seconds=(last_step + 1) * STEP_SECONDS + 0.4)
    p = style.worker(fail_rank)
    out += [p + line for line in oom_traceback(fail_rank)]
    nodes = (ranks + RANKS_PER_HOST - 1) // RANKS_PER_HOST
    fail_node = fail_rank // RANKS_PER_HOST
    agents = style.name not in ("srun", "mpirun")
    if agents:
        out += agent_report(style, ranks, fail_node, fail_rank, 1, t_fail, pids)
        waiting = [r for r in range(ranks) if r // RANKS_PER_HOST != fail_node]
    else:
        waiting = [r for r in range(ranks) if r != fail_rank]
    seq = 8 * last_step + 3
    numel = 220084533
    rng.shuffle(waiting)
    t_wd = t_fail + dt.timedelta(milliseconds=NCCL_TIMEOUT_MS + 58)
    first_abort: dict[int, int] = {}
    for i, r in enumerate(waiting):
        first_abort.setdefault(r // RANKS_PER_HOST, r)
        t = t_wd + dt.timedelta(microseconds=3100 * i + rng.randrange(3000))
        pr, pg = style.worker(r), style.glued(r)
        out += [(pg if line.startswith("[E") else pr) + line
                for line in watchdog_lines(r, seq, numel, t, NCCL_TIMEOUT_MS + 58 + rng.randrange(40))]
    t_end = t_wd + dt.timedelta(seconds=4)
    if style.name == "srun":
        out += [f"srun: error: {host_of(fail_rank)}: task {fail_rank}: Exited with exit code 1",
                "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.",
                f"slurmstepd: error: *** STEP 4721337.0 ON node-000 CANCELLED AT "
                f"{t_end.strftime('%Y-%m-%dT%H:%M:%S')} ***"]
        for node in range(nodes):
            lo, hi = node * RANKS_PER_HOST, min(ranks, (node + 1) * RANKS_PER_HOST) - 1
            if lo <= fail_rank <= hi:
                continue
            out.append(f"srun: error: node-{node:03d}: tasks {lo}-{hi}: Aborted (core dumped)")
        return out
    if style.name == "mpirun":
        out += ["-" * 74,
                "Primary job  terminated normally, but 1 process returned",
                "a non-zero exit code. Per user-direction, the job has been aborted.",
                "-" * 74, "-" * 74,
                "mpirun detected that one or more processes exited with non-zero status, thus causing",
                "the job to be terminated. The first process to do so was:", "",
                f"  Process name: [[40417,1],{fail_rank}]",
                "  Exit code:    1",
                "-" * 74]
        return out
    for node in range(nodes):
        if node != fail_node:
            out += agent_report(style, ranks, node, first_abort[node], -6, t_end, pids)
    return out


# --------------------------------------------------------------------------------------------- main


def generate(out, size: int, ranks: int, style_name: str, fail_rank: int, seed: int) -> dict:
    """Write the log to the binary stream `out`; returns facts about what was written."""
    rng = random.Random(seed)
    style = Style(style_name)
    pids = [20000 + 97 * (r // RANKS_PER_HOST) + 3 * (r % RANKS_PER_HOST) + 1 for r in range(ranks)]
    head = ("\n".join(header(style, ranks, rng, pids)) + "\n").encode("utf-8")
    templates = build_templates(style, ranks, random.Random(seed + 1), TOTAL_STEPS)
    per_template = sum(len(t.render(0)) for t in templates) / len(templates)
    body_budget = max(0, size - len(head))
    # the tail is generated up front (its size depends only on the rank count) so the total can match --size
    tail_probe_steps = int(body_budget / per_template) * templates[0].steps + templates[0].steps
    tail_bytes = ("\n".join(tail(style, ranks, fail_rank, tail_probe_steps, random.Random(seed + 2), pids))
                  + "\n").encode("utf-8")
    body_budget = max(0, body_budget - len(tail_bytes))
    out.write(head)
    written = len(head)
    step = 1
    i = 0
    body = 0
    # always at least one block, so even a "small" log has training steps before the failure
    while i == 0 or body + per_template / 2 <= body_budget:
        tpl = templates[i % len(templates)]
        block = tpl.render(step)
        out.write(block)
        body += len(block)
        step += tpl.steps
        i += 1
    last_step = step - 1
    tail_bytes = ("\n".join(tail(style, ranks, fail_rank, last_step, random.Random(seed + 2), pids))
                  + "\n").encode("utf-8")
    out.write(tail_bytes)
    written += body + len(tail_bytes)
    return {"generator": GEN_VERSION, "bytes": written, "ranks": ranks, "prefix": style_name, "fail_rank": fail_rank, "failure": "memory.cuda-oom",
            "steps": last_step, "seed": seed, "tail_bytes": len(tail_bytes), "header_bytes": len(head)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("output", help="file to write, or - for stdout")
    ap.add_argument("--size", type=parse_size, default=parse_size("20MiB"),
                    help="target size, e.g. 20MiB, 200MiB, 1GiB (default 20MiB; the header and the failure tail "
                         "are always written, so tiny sizes give the smallest log for these ranks)")
    ap.add_argument("--ranks", type=int, default=1024, help="world size (default 1024)")
    ap.add_argument("--prefix", choices=PREFIX_STYLES, default="rank",
                    help="launcher prefix of worker lines: rank=[rankN]:, default=[defaultL]:[rankN]:, srun='N: ', "
                         "mpirun=[1,N]<stderr>:, pdsh='node-HHH: ' (8 ranks per host), none")
    ap.add_argument("--fail-rank", type=int, default=None, help="rank that runs out of memory (default: seeded)")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--meta", help="also write what was planted as JSON to this file")
    args = ap.parse_args(argv)
    if args.ranks < 2:
        ap.error("--ranks must be at least 2")
    fail_rank = args.fail_rank if args.fail_rank is not None else random.Random(args.seed).randrange(args.ranks)
    if not 0 <= fail_rank < args.ranks:
        ap.error("--fail-rank must be in [0, ranks)")
    t0 = time.perf_counter()
    if args.output == "-":
        facts = generate(sys.stdout.buffer, args.size, args.ranks, args.prefix, fail_rank, args.seed)
    else:
        with open(args.output, "wb", buffering=4 * 1024 * 1024) as fh:
            facts = generate(fh, args.size, args.ranks, args.prefix, fail_rank, args.seed)
    secs = time.perf_counter() - t0
    facts["seconds"] = round(secs, 3)
    facts["mb_per_s"] = round(facts["bytes"] / 1e6 / secs, 1) if secs > 0 else None
    if args.meta:
        with open(args.meta, "w") as fh:
            json.dump(facts, fh, indent=2)
    print(f"gen_log: {facts['bytes'] / 2**20:.1f} MiB, {args.ranks} ranks, prefix={args.prefix}, "
          f"fail rank {fail_rank}, {facts['steps']} steps in {secs:.2f}s ({facts['mb_per_s']} MB/s)",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
