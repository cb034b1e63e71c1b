"""Issue #22 item 6: the language server's diagnose command streams a file that is not open, as the CLI
does, instead of reading it whole (its peak memory does not grow with the log), and gives the CLI's answer."""

from __future__ import annotations

import json
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


def _cli_peak(log: Path) -> tuple[float, dict[str, object]]:
    """Peak RSS (MiB) of `rootrank diagnose --format json` on `log`, run in a fresh interpreter, and its JSON."""
    import json
    import subprocess
    import sys

    probe = ("import json, resource, subprocess, sys\n"
             "done = subprocess.run([sys.executable, '-m', 'rootrank', 'diagnose', '--format', 'json', sys.argv[1]],"
             " capture_output=True)\n"
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)\n"
             "sys.stdout.write(done.stdout.decode())\n")
    done = subprocess.run([sys.executable, "-c", probe, str(log)], capture_output=True, text=True, timeout=300,
                          check=True)
    peak, _, report = done.stdout.partition("\n")
    return float(peak), json.loads(report)


def _peaks(tmp_path: Path, sizes: tuple[int, ...], *flags: str) -> list[tuple[float, dict[str, object]]]:
    """For each rank count, a `bench/gen_ranks.py` log (with `flags`), the CLI's peak RSS and JSON on it, and
    the checks every size must pass: rank N // 3's ValueError first, every other rank collateral."""
    import subprocess
    import sys

    generator = Path(__file__).resolve().parents[2] / "bench" / "gen_ranks.py"
    out = []
    for ranks in sizes:
        path = tmp_path / f"ranks-{ranks}.log"
        subprocess.run([sys.executable, str(generator), str(path), "--ranks", str(ranks), *flags],
                       check=True, timeout=120)
        peak, got = _cli_peak(path)
        root = got["root_cause"]
        assert isinstance(root, dict)
        assert root["rank"] == ranks // 3 and root["rule"] == "process.uncaught-exception"
        assert got["collateral_count"] == ranks - 1 and got["ranks_seen"] == f"0-{ranks - 1}"
        out.append((peak, got))
    return out


def test_a_cascade_of_many_ranks_costs_bits_not_events(tmp_path: Path) -> None:
    """Item 6: 100,000 ranks with one gloo timeout each (the lines torch 2.13 printed in the gloo fixtures)
    and one rank's ValueError first. Past the first ranks of one symptom line, a rank is a bit in a
    RankGroup, and every rank set is a `RankSet` (bits past a few thousand ranks) written as ranges: the
    diagnosis is the same, memory grows by far less than an event per rank (before the groups: 215 MiB more;
    before the rank sets: 65 MiB more) and the JSON does not grow with the ranks (bench/bench_memory.py
    reports the figures)."""
    (base, small_report), (peak, report) = _peaks(tmp_path, (1000, 100_000))
    for got, ranks in ((small_report, 1000), (report, 100_000)):
        assert got["ranks_seen_count"] == ranks
        timeouts = [f for f in got["findings"] if f["rank_count"] == ranks - 1]  # type: ignore[union-attr]
        assert timeouts and timeouts[0]["ranks"] == f"0-{ranks // 3 - 1},{ranks // 3 + 1}-{ranks - 1}"
    print(f"peak RSS {base:.0f} MiB at 1,000 ranks, {peak:.0f} MiB at 100,000")
    # An event per rank cost about 1.8 KB (180 MiB more at 100,000 ranks), a rank in Python int sets some
    # 0.6 KB (65 MiB more); as bits the growth is the reading of a 16 MB log (about 30 MiB here), so 50.
    assert peak - base < 50, (base, peak)
    assert len(json.dumps(report)) < len(json.dumps(small_report)) + 1024  # ranges: the same size at any count


def test_a_cascade_of_tracebacks_costs_bits_too(tmp_path: Path) -> None:
    """Real ranks print their timeout at the end of a traceback (the gloo fixtures), one block per rank. A
    block is decided when it can take no more lines (the grouper's on_close): past the first ranks of the
    same symptom it becomes a bit as a stand-alone line does. Before: about 1.6 KB a rank (210 MiB at
    100,000 ranks); the diagnosis is the same."""
    (base, small_report), (peak, report) = _peaks(tmp_path, (1000, 50_000), "--tracebacks")
    for got in (small_report, report):
        groups = got["collateral_ranges"]
        assert [g["rule"] for g in groups] == ["distributed.collective-timeout"]  # type: ignore[index]
    print(f"peak RSS {base:.0f} MiB at 1,000 ranks' tracebacks, {peak:.0f} MiB at 50,000")
    assert peak - base < 40, (base, peak)  # an event per rank: about 80 MiB more


def test_a_cascade_of_ray_workers_costs_bits_too(tmp_path: Path) -> None:
    """Every line prefixed the way Ray prefixes a worker's output, `(RayTrainWorker pid=P, ip=IP)`: a pid
    per rank, an ip per 8 ranks. The rank -> host map is an array (`RankHosts`), pids and "agents" are
    capped; before: 118 MiB at 200,000 ranks (86 more than at 1,000; 215 MiB with an ip a rank), now 69 (39
    more); at 100,000 the old dicts still fit in 50 MiB more, so the size is what tells them apart. The
    initiating rank's host still comes from its prefix."""
    (base, small_report), (peak, report) = _peaks(tmp_path, (1000, 200_000), "--ray")
    for got, ranks in ((small_report, 1000), (report, 200_000)):
        node = ranks // 3 // 8
        assert got["root_cause"]["host"] == f"10.{node >> 16 & 255}.{node >> 8 & 255}.{node & 255}"  # type: ignore[index]
    print(f"peak RSS {base:.0f} MiB at 1,000 Ray workers, {peak:.0f} MiB at 200,000")
    assert peak - base < 60, (base, peak)
