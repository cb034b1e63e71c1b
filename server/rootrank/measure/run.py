"""Running the probe in the user's interpreter: which interpreter, the request, progress, cancellation.

The probe (probe.py beside this file) is started as a script by the interpreter that has torch; it is
never imported here. Its stdout carries JSON lines; stderr is what the user's code printed (its last
lines are kept for error messages).
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rootrank.measure.records import MeasureError

PROBE = Path(__file__).with_name("probe.py")
ProgressCallback = Callable[[str, int, int], None]


@dataclass(frozen=True, slots=True)
class MeasureRequest:
    """What to measure. Exactly one of `target` (MODULE:FACTORY) and `hf_config` (a config.json)."""

    target: str | None = None
    hf_config: str | None = None
    batch_size: int = 1
    seq_len: int = 512
    device: str = "meta"
    dtype: str | None = None
    cwd: str = "."

    def subject(self) -> str:
        if self.hf_config:
            return f"{self.hf_config} (batch {self.batch_size}, sequence {self.seq_len})"
        return str(self.target)


def find_interpreter(explicit: str | None, cwd: str, environ: dict[str, str] | None = None) -> str:
    """--python, else the active virtual environment, else `.venv` of the working directory, else the
    interpreter running rootrank."""
    env = os.environ if environ is None else environ
    if explicit:
        return explicit
    bin_dir = "Scripts" if os.name == "nt" else "bin"
    exe = "python.exe" if os.name == "nt" else "python"
    candidates = []
    if env.get("VIRTUAL_ENV"):
        candidates.append(Path(env["VIRTUAL_ENV"]) / bin_dir / exe)
    candidates.append(Path(cwd) / ".venv" / bin_dir / exe)
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return sys.executable


def run_probe(request: MeasureRequest, python: str, on_progress: ProgressCallback | None = None,
              cancelled: Callable[[], bool] | None = None, timeout: float | None = None) -> dict[str, Any]:
    """The probe's result JSON; MeasureError for anything that stops it (its kind and one-line message)."""
    if bool(request.target) == bool(request.hf_config):
        raise MeasureError("bad-request", "give either MODULE:FACTORY or --hf-config PATH")
    cwd = os.path.abspath(request.cwd)
    payload = {"target": request.target, "batch_size": request.batch_size, "seq_len": request.seq_len,
               "device": request.device, "dtype": request.dtype, "path": [cwd],
               "hf_config": os.path.join(cwd, request.hf_config) if request.hf_config else None}
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONUNBUFFERED="1")
    try:
        process = subprocess.Popen([python, str(PROBE), json.dumps(payload)], cwd=cwd, env=env,
                                   stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as exc:
        raise MeasureError("no-python", f"cannot start {python}: {exc.strerror or exc}") from None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    stderr_tail: list[bytes] = []
    buffers = {"out": b"", "err": b""}
    deadline = time.monotonic() + timeout if timeout else None
    selector = selectors.DefaultSelector()
    assert process.stdout is not None and process.stderr is not None
    selector.register(process.stdout, selectors.EVENT_READ, "out")
    selector.register(process.stderr, selectors.EVENT_READ, "err")
    try:
        open_streams = 2
        while open_streams:
            if cancelled is not None and cancelled():
                raise MeasureError("cancelled", "measurement cancelled")
            if deadline is not None and time.monotonic() > deadline:
                raise MeasureError("timeout", f"the measurement took longer than {timeout:.0f} s")
            for key, _ in selector.select(timeout=0.1):
                chunk = os.read(key.fileobj.fileno(), 1 << 16)  # type: ignore[union-attr]
                if not chunk:
                    selector.unregister(key.fileobj)
                    open_streams -= 1
                    continue
                buffers[key.data] += chunk
                *lines, buffers[key.data] = buffers[key.data].split(b"\n")
                if key.data == "err":
                    stderr_tail = (stderr_tail + lines)[-20:]
                    continue
                for line in lines:
                    message = _decode(line)
                    if message is None:
                        continue
                    if message.get("type") == "progress" and on_progress is not None:
                        on_progress(str(message.get("message", "")), int(message.get("done", 0)),
                                    int(message.get("total", 0)))
                    elif message.get("type") == "result":
                        result = message.get("data")
                    elif message.get("type") == "error":
                        error = message
        process.wait()
    finally:
        selector.close()
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdout.close()
        process.stderr.close()
    if error is not None:
        raise MeasureError(str(error.get("kind", "probe-failed")), str(error.get("message", "")),
                           str(error.get("detail", "")))
    if result is None:
        tail = b"\n".join(stderr_tail[-5:]).decode("utf-8", "replace").strip()
        raise MeasureError("probe-failed", f"{python} exited with status {process.returncode} without a result"
                           + (f": {tail.splitlines()[-1]}" if tail else ""), tail)
    return result


def _decode(line: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
