"""Running `rootrank watch` as a user does: a real process, its two streams read line by line with the
time each line came."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

JOBS = Path(__file__).parent / "jobs"


def rootrank_command() -> list[str]:
    return [sys.executable, "-m", "rootrank"]


def environment() -> dict[str, str]:
    env = dict(os.environ)
    # The test environment's programs (torchrun, py-spy) are beside its interpreter, activated or not.
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env.pop("ROOTRANK_WATCH_STATUS_DIR", None)
    return env


def torchrun() -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run"]


class Running:
    """A started `rootrank watch`; `lines[stream]` fills as its output comes: (seconds since start, line)."""

    def __init__(self, args: list[str], cwd: Path, env: dict[str, str] | None = None, stdin: int | None = None) -> None:
        self.start = time.monotonic()
        self.process = subprocess.Popen(rootrank_command() + args, cwd=cwd, env=env or environment(), stdin=stdin,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lines: dict[str, list[tuple[float, bytes]]] = {"stdout": [], "stderr": []}
        self._readers = [threading.Thread(target=self._read, args=(name, handle), daemon=True)
                         for name, handle in (("stdout", self.process.stdout), ("stderr", self.process.stderr))]
        for reader in self._readers:
            reader.start()

    def _read(self, name: str, handle: object) -> None:
        for line in iter(handle.readline, b""):  # type: ignore[attr-defined]
            self.lines[name].append((time.monotonic() - self.start, line))

    def wait_for(self, stream: str, text: bytes, timeout: float) -> float | None:
        """Seconds since start when a line holding `text` came, None if it did not within `timeout`."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for at, line in list(self.lines[stream]):
                if text in line:
                    return at
            if self.process.poll() is not None and all(not r.is_alive() for r in self._readers):
                return None
            time.sleep(0.05)
        return None

    def text(self, stream: str) -> bytes:
        return b"".join(line for _, line in self.lines[stream])

    def finish(self, timeout: float = 60) -> int:
        code = self.process.wait(timeout)
        for reader in self._readers:
            reader.join(10)
        return code

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


def children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []
