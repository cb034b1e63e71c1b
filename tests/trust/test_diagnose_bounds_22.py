"""Issue #22 item 6: the language server's diagnose command streams a file that is not open, as the CLI
does, instead of reading it whole (its peak memory does not grow with the log), and gives the CLI's answer."""

from __future__ import annotations

from pathlib import Path

from rootrank.diagnose import diagnose_paths
from rootrank.lsp import engine
from rootrank.render.json import diagnosis_to_json
from tests.trust.conftest import ROOT_CAUSE_LOG


def _peak_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as handle:
        return next(int(line.split()[1]) for line in handle if line.startswith("VmHWM:")) / 1024


def test_the_streamed_file_gives_the_cli_answer() -> None:
    streamed = diagnosis_to_json(engine.diagnose_file(str(ROOT_CAUSE_LOG)))
    assert streamed == diagnosis_to_json(diagnose_paths([str(ROOT_CAUSE_LOG)]))
    assert streamed["root_cause"]["rank"] == 2


def test_the_diagnose_command_streams_a_file_that_is_not_open(raw_lsp, tmp_path: Path) -> None:
    log = tmp_path / "big.log"
    step = "".join(f"[rank{r}]: step 17 loss 0.4711 lr 3e-4 tokens/s 91234\n" for r in range(8)).encode()
    with open(log, "wb") as out:
        for _ in range(160_000):  # 60 MB of training steps, then the failure
            out.write(step)
        out.write(ROOT_CAUSE_LOG.read_bytes())
    assert log.stat().st_size > 60 << 20
    small = tmp_path / "small.log"
    small.write_bytes(ROOT_CAUSE_LOG.read_bytes())
    server = raw_lsp()
    server.initialize(tmp_path)
    for path in (small, log):
        reply = server.request("workspace/executeCommand", {"command": "rootrank.diagnose",
                                                            "arguments": ["", path.as_uri()]}, timeout=300)
        assert reply.get("result", {}).get("root_cause", {}).get("rank") == 2, str(reply)[:2000]
        if path is small:
            baseline = _peak_mib(server.proc.pid)
    grown = _peak_mib(server.proc.pid) - baseline
    print(f"the server's peak grew by {grown:.0f} MiB for a {log.stat().st_size >> 20} MiB log")
    # Read whole, the 60 MB file sat in memory twice over (bytes, then text); streamed, it never does.
    assert grown < 30, grown
    assert server.shutdown() == 0
