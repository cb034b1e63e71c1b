"""`rootrank scan` on a generated fleet: planted failures found per run, the lemon host ranked first,
unreadable runs listed, the resume cache, a worker killed mid-scan, the CLI."""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from rootrank.diagnose import diagnose_paths
from rootrank.fleet import scan
from rootrank.fleet.jsonl import render_jsonl
from rootrank.fleet.record import SCHEMA, row_from_json, row_to_json
from rootrank.fleet.text import render_text
from rootrank.fleet.views import summarize_fleet
from tests.fleet.conftest import BUSY, LEMON, Fleet, gen_fleet, run_key


def test_every_run_has_one_row(fleet: Fleet) -> None:
    assert sorted(run_key(r.run) for r in fleet.local.rows) == sorted(fleet.truth)


def test_planted_failures_found(fleet: Fleet) -> None:
    planted = 0
    second_node = 0
    for row in fleet.local.rows:
        truth = fleet.truth[run_key(row.run)]
        if truth.get("unreadable"):
            assert row.status == "unreadable" and row.error, row
            continue
        if "fixture" in truth:
            # A real log: the row says what `rootrank diagnose` says of it.
            alone = diagnose_paths([row.path]).root_cause
            assert row.rule == (alone.rule if alone else None) and row.rank == (alone.rank if alone else None)
            continue
        assert row.hosts == tuple(truth["hosts"]), row  # type: ignore[arg-type]
        if truth["rule"] is None:
            assert not row.failed, row
            continue
        planted += 1
        assert row.failed and row.rule == truth["rule"], (row, truth)
        # The initiating rank and its host, on either of the job's two nodes, for an OOM and for the
        # lemon's ECC errors alike.
        assert (row.rank, row.host) == (truth["rank"], truth["host"]), (row, truth)
        second_node += int(truth["rank"]) >= gen_fleet.gen_log.RANKS_PER_HOST  # type: ignore[call-overload]
        assert row.decided_by and row.evidence and row.time, row
    assert planted >= 20 and second_node >= 5, (planted, second_node)


def test_lemon_host_ranked_first(fleet: Fleet) -> None:
    summary = summarize_fleet(list(fleet.local.rows))
    first, second = summary.hosts[0], summary.hosts[1]
    assert first.host == LEMON
    assert first.ran == 40
    assert first.initiated >= 5 and first.excess >= 2 * second.excess
    assert first.evidence and all(LEMON in line for _, line in first.evidence)
    # The busy host ran half as many jobs again, with the fleet's usual rate of failures: below the lemon.
    busy = [h for h in summary.hosts if h.host == BUSY]
    ran_busy = sum(BUSY in r.hosts for r in fleet.local.rows)
    assert ran_busy == 60
    assert not busy or (busy[0].excess < first.excess / 2 and summary.hosts.index(busy[0]) > 0)
    assert any(h == LEMON and rule == "hardware.xid-memory-ecc" for h, rule, _ in summary.hardware)
    assert sum(n for _, n in summary.by_entry) == summary.failed
    assert sum(total for _, _, total in summary.by_week) == summary.runs - len(summary.unreadable)


def test_rows_round_trip_through_json(fleet: Fleet) -> None:
    for row in fleet.local.rows:
        data = json.loads(json.dumps(row_to_json(row)))
        assert data["schema"] == SCHEMA
        assert row_from_json(data) == row


def test_resume_cache_skips_unchanged_runs(fleet: Fleet, tmp_path: Path) -> None:
    root = tmp_path / "runs"
    root.mkdir()
    for name in sorted(os.listdir(fleet.root))[:6]:
        source = fleet.root / name
        (shutil.copytree if source.is_dir() else shutil.copy2)(source, root / name)
    cache = tmp_path / "cache.json"
    first = scan(str(root), jobs=1, cache=cache)
    assert first.from_cache == 0 and cache.is_file()
    second = scan(str(root), jobs=1, cache=cache)
    readable = sum(r.status != "unreadable" for r in first.rows)
    assert second.from_cache == readable and second.rows == first.rows
    changed = next(p for p in sorted(root.rglob("*")) if p.is_file() and p.suffix in (".log", ".out", ".txt"))
    os.utime(changed, (1_800_000_000, 1_800_000_000))
    third = scan(str(root), jobs=1, cache=cache)
    assert third.from_cache == readable - 1


def test_a_killed_worker_loses_no_run(fleet: Fleet) -> None:
    killed: list[int] = []

    def kill_one(done: int, total: int) -> None:
        if not killed and done >= 20:
            children = multiprocessing.active_children()
            if children:
                killed.append(children[0].pid or 0)
                os.kill(children[0].pid or 0, signal.SIGKILL)

    again = scan(str(fleet.root), jobs=2, cache=None, on_progress=kill_one)
    assert killed
    assert render_jsonl(again.rows) == render_jsonl(fleet.local.rows)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rootrank", *args], capture_output=True, text=True, timeout=300)


def test_cli_jsonl_and_html(fleet: Fleet, tmp_path: Path) -> None:
    out = _cli("scan", str(fleet.root), "--format", "jsonl", "--no-cache", "--jobs", "2",
               "--html", str(tmp_path / "f.html"))
    assert out.returncode == 1, out.stderr
    assert out.stdout == render_jsonl(fleet.local.rows)
    assert (tmp_path / "f.html").read_text().startswith("<!DOCTYPE html>")


def test_text_report(fleet: Fleet) -> None:
    text = render_text(fleet.local.rows, summarize_fleet(list(fleet.local.rows)))
    hosts = text.split("Initiating hosts", 1)[1]
    assert hosts.splitlines()[1].split()[0] == LEMON
    assert "unreadable" in text and "directory holds no log files" in text
    assert len([line for line in text.splitlines() if line.startswith(("job-", "slurm-"))]) == len(fleet.truth)


def test_cli_bad_root_is_one_line() -> None:
    out = _cli("scan", "/nonexistent/runs", "--no-cache")
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and "no such file" in out.stderr
