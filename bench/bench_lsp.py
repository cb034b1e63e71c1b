"""Benchmark `rootrank lsp`: cold start, and the time from a keystroke to fresh diagnostics.

* cold start: spawn `python -m rootrank.lsp` -> its `initialize` response (median of N runs);
* keystroke -> diagnostics: on generated 2k- and 10k-line training files, a one-character
  `didChange` (incremental, as editors send it) -> the `publishDiagnostics` for that version, after a
  pause longer than the debounce (the first edit after a pause is checked at once);
* the same for a 10k-line training log (a diagnosis instead of a check; informational, no target).

Targets: cold start < 450 ms, diagnostics < 50 ms for 10k lines. Timings are reported, never asserted.

    .venv/bin/python bench/bench_lsp.py [--runs 15] [--edits 15] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

SERVER = [sys.executable, "-m", "rootrank.lsp"]
TARGET_COLD_MS = 450
TARGET_DIAG_MS = 50

HEADER = '''"""Generated training file for the rootrank language-server benchmark."""
import torch
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.checkpoint import checkpoint

'''
BLOCK = '''
class Block{i}(nn.Module):
    """Block {i}: attention-free MLP with a residual."""

    def __init__(self, dim=256):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 4 * dim)
        self.fc2 = nn.Linear(4 * dim, dim)
        self.scale = 1.0 / (dim ** 0.5)

    def inner(self, x):
        h = self.fc1(self.norm(x))
        h = torch.nn.functional.gelu(h)
        return self.fc2(h) * self.scale

    def forward(self, x):
        if self.training:
            return x + checkpoint(self.inner, x{reentrant})
        return x + self.inner(x)

'''


def training_file(lines: int) -> str:
    parts, i = [HEADER], 0
    count = HEADER.count("\n")
    while count < lines:
        block = BLOCK.format(i=i, reentrant="" if i % 3 == 0 else ", use_reentrant=False")
        parts.append(block)
        count += block.count("\n")
        i += 1
    return "".join(parts)


def training_log(lines: int) -> str:
    body = [f"[rank{i % 8}]:step {i} loss {2 + (i % 97) / 100:.2f} lr 3e-4 grad_norm 1.2\n" for i in range(lines)]
    body.append("[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a "
                "total capacity of 79.11 GiB of which 1.02 GiB is free.\n")
    return "".join(body)


class Connection:
    """A minimal stdio JSON-RPC client with a reader thread."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.process = subprocess.Popen(SERVER, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL)
        self.messages: queue.Queue[tuple[float, dict[str, Any]]] = queue.Queue()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        while True:
            length = 0
            while True:
                line = stream.readline()
                if not line:
                    return
                line = line.strip()
                if not line:
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            self.messages.put((time.perf_counter(), json.loads(stream.read(length))))

    def send(self, payload: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **payload}).encode()
        assert self.process.stdin is not None
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def request(self, method: str, params: Any) -> int:
        self.next_id += 1
        self.send({"id": self.next_id, "method": method, "params": params})
        return self.next_id

    def notify(self, method: str, params: Any) -> None:
        self.send({"method": method, "params": params})

    def wait(self, match: Any, timeout: float = 60.0) -> tuple[float, dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while True:
            at, message = self.messages.get(timeout=max(deadline - time.monotonic(), 0.001))
            if message.get("method") == "workspace/configuration" or message.get("method", "").startswith(
                    "window/workDoneProgress/create"):
                self.send({"id": message["id"], "result": None})
            if match(message):
                return at, message

    def initialize(self, root: str | None = None) -> float:
        request = self.request("initialize", {"processId": os.getpid(), "rootUri": root, "capabilities": {}})
        at, _ = self.wait(lambda m: m.get("id") == request)
        self.notify("initialized", {})
        return at - self.started

    def close(self) -> None:
        try:
            self.request("shutdown", None)
            self.notify("exit", None)
            self.process.wait(timeout=5)
        except Exception:
            self.process.kill()


def cold_start(runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        connection = Connection()
        times.append(connection.initialize() * 1000)
        connection.process.kill()
        connection.process.wait()
    return times


def keystroke_to_diagnostics(text: str, name: str, edits: int) -> tuple[list[float], int]:
    connection = Connection()
    connection.initialize()
    uri = Path(f"/tmp/rootrank-bench/{name}").as_uri()
    language = "python" if name.endswith(".py") else "log"
    connection.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": language, "version": 1, "text": text}})
    _, first = connection.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                               and m["params"]["uri"] == uri)
    count = len(first["params"]["diagnostics"])
    lines = text.split("\n")
    # edit a line near the middle: a comment character appended at its end, then removed
    target = len(lines) // 2
    while not lines[target].strip():
        target += 1
    column = len(lines[target])
    times = []
    for version in range(2, 2 + edits):
        time.sleep(0.25)  # a pause longer than the debounce: the next edit is checked at once
        insert = version % 2 == 0
        change = ({"range": {"start": {"line": target, "character": column},
                             "end": {"line": target, "character": column}}, "text": " "} if insert else
                  {"range": {"start": {"line": target, "character": column},
                             "end": {"line": target, "character": column + 1}}, "text": ""})
        sent = time.perf_counter()
        connection.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                                     "contentChanges": [change]})
        at, _ = connection.wait(lambda m, v=version: m.get("method") == "textDocument/publishDiagnostics"
                                and m["params"]["uri"] == uri and m["params"].get("version") == v)
        times.append((at - sent) * 1000)
    connection.close()
    return times, count


def summary(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)
    return {"median_ms": round(statistics.median(ordered), 1), "min_ms": round(ordered[0], 1),
            "p90_ms": round(ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))], 1),
            "max_ms": round(ordered[-1], 1), "n": len(ordered)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=15, help="cold starts to time")
    parser.add_argument("--edits", type=int, default=15, help="edits to time per file")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args()

    results: dict[str, Any] = {"cold_start": summary(cold_start(args.runs))}
    for lines in (2_000, 10_000):
        times, count = keystroke_to_diagnostics(training_file(lines), f"train_{lines}.py", args.edits)
        results[f"didChange_to_diagnostics_py_{lines}"] = {**summary(times), "diagnostics": count}
    times, count = keystroke_to_diagnostics(training_log(10_000), "train_10000.log", max(args.edits // 3, 3))
    results["didChange_to_diagnostics_log_10000"] = {**summary(times), "diagnostics": count}
    results["load_average"] = os.getloadavg()[0] if hasattr(os, "getloadavg") else None

    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"rootrank lsp benchmark (python {sys.version.split()[0]}, {os.cpu_count()} CPUs, "
          f"load average {results['load_average']})")
    rows = [("cold start (spawn -> initialize response)", results["cold_start"], TARGET_COLD_MS)]
    for key, label in (("didChange_to_diagnostics_py_2000", "didChange -> diagnostics, 2k-line .py"),
                       ("didChange_to_diagnostics_py_10000", "didChange -> diagnostics, 10k-line .py"),
                       ("didChange_to_diagnostics_log_10000", "didChange -> diagnostics, 10k-line log")):
        rows.append((label, results[key], TARGET_DIAG_MS if "py" in key else None))
    for label, figures, target in rows:
        verdict = "" if target is None else (f"  target < {target} ms: "
                                             + ("met" if figures["median_ms"] < target else "NOT met"))
        print(f"  {label:44s} median {figures['median_ms']:7.1f} ms  p90 {figures['p90_ms']:7.1f} ms  "
              f"min {figures['min_ms']:7.1f} ms  (n={figures['n']}){verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
