"""`rootrank diagnose --format json` on hostile input: it exits 0, 1 or 2, prints one line on 2 and valid
JSON otherwise, never a traceback, within a minute, in bounded memory and roughly linear time."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.trust.conftest import ROOT_CAUSE_LOG, Run, assert_well_behaved, run_cli

FIXTURE = ROOT_CAUSE_LOG.read_bytes()


def diagnose(path: Path | str, *extra: str, stdin: bytes | Path | None = None, timeout: float = 60) -> Run:
    return run_cli(["diagnose", "--format", "json", *extra, str(path)], stdin=stdin, timeout=timeout)


def finds_rank2(data: dict) -> bool:
    root = data.get("root_cause") or {}
    return root.get("rule") == "process.uncaught-exception" and root.get("rank") == 2


# --------------------------------------------------------------------------- junk bytes


def _random_bytes(n: int, seed: int = 0) -> bytes:
    return random.Random(seed).randbytes(n)


HOSTILE_SMALL = {
    "random-bytes": _random_bytes(2_000_000),
    "nul-bytes": b"\x00" * 1_000_000 + b"\n" + b"\x00abc\x00\n" * 1000,
    "invalid-utf8": b"\xff\xfe\xc3\x28\xa0\xa1\xe2\x28\xa1\xf0\x28\x8c\xbc\xed\xa0\x80\n" * 20_000,
    "lone-surrogates-and-overlongs": b"\xc0\xaf\xe0\x80\xaf\xed\xbf\xbf\xf4\x90\x80\x80\n" * 10_000,
    "escape-soup": b"\x1b[31m\x1b]0;title\x07\x1b[?25l^[[0m ESC[1m\r\r\r\x08\x7f\n" * 20_000,
    "only-newlines": b"\n" * 500_000,
    "only-carriage-returns": b"\r" * 500_000,
    "truncated-traceback": b"[rank1]: Traceback (most recent call last):\n[rank1]:   File \"train.py\", line 3",
    "traceback-no-exception": b"Traceback (most recent call last):\n  File \"a.py\", line 1, in <module>\n" * 3000,
    "prefix-soup": b"[rank]: [rank-1]: [rank99999999999]: [default]: [:]: [a:b]: 1,]<stderr>: : \n" * 10_000,
    "glued-prefixes": (b"x" * 100 + b"[rank1]:" + b"y" * 100 + b"[host:3]:") * 2000 + b"\n",
    "huge-numbers": b"[rank0]: RuntimeError: CUDA out of memory. Tried to allocate " + b"9" * 5000
                    + b" GiB (GPU 0; " + b"9" * 5000 + b" GiB total capacity)\n",
}


@pytest.mark.parametrize("name", sorted(HOSTILE_SMALL))
def test_junk_input_is_survived(name: str, tmp_path: Path) -> None:
    path = tmp_path / "junk.log"
    path.write_bytes(HOSTILE_SMALL[name])
    run = diagnose(path)
    assert run.returncode in (0, 1), (run.returncode, run.stderr)
    assert_well_behaved(run)


def test_junk_around_a_real_failure_does_not_hide_it(tmp_path: Path) -> None:
    junk = _random_bytes(300_000, seed=1).replace(b"\n", b" ").replace(b"\r", b" ")
    lines = FIXTURE.split(b"\n")
    mixed = b"\n".join(line + b"\n" + junk[i * 97 % 290_000:][:2000].replace(b"\x1b", b" ")
                       if i % 3 == 0 else line for i, line in enumerate(lines))
    path = tmp_path / "mixed.log"
    path.write_bytes(b"\x00\xff" * 1000 + b"\n" + mixed)
    data = assert_well_behaved(diagnose(path))
    assert finds_rank2(data), data.get("root_cause")


def test_cr_only_line_endings(tmp_path: Path) -> None:
    path = tmp_path / "cr.log"
    path.write_bytes(FIXTURE.replace(b"\n", b"\r"))
    data = assert_well_behaved(diagnose(path))
    assert finds_rank2(data), data.get("root_cause")


def test_crlf_line_endings(tmp_path: Path) -> None:
    path = tmp_path / "crlf.log"
    path.write_bytes(FIXTURE.replace(b"\n", b"\r\n"))
    data = assert_well_behaved(diagnose(path))
    assert finds_rank2(data), data.get("root_cause")


def test_nested_and_truncated_tracebacks(tmp_path: Path) -> None:
    chain = []
    for depth in range(300):
        chain.append(f"[rank1]:Traceback (most recent call last):\n[rank1]:  File \"m{depth}.py\", line {depth}, "
                     f"in f{depth}\n[rank1]:    raise KeyError({depth})\n[rank1]:KeyError: {depth}\n[rank1]:\n"
                     "[rank1]:During handling of the above exception, another exception occurred:\n[rank1]:\n")
    deep_frames = "".join("[rank0]:  File \"r.py\", line 2, in f\n[rank0]:    return f(n - 1)\n" for _ in range(20_000))
    text = ("".join(chain) + "[rank1]:Traceback (most recent call last):\n[rank1]:  File \"x.py\", line 1\n"
            + "[rank0]:Traceback (most recent call last):\n" + deep_frames
            + "[rank0]:  [Previous line repeated 996 more times]\n"
            + "[rank0]:RecursionError: maximum recursion depth exceeded\n"
            + "[rank3]:Traceback (most recent call last):\n[rank3]:  File \"cut.py\", li")
    path = tmp_path / "nested.log"
    path.write_text(text)
    data = assert_well_behaved(diagnose(path))
    assert data["root_cause"] is not None


# --------------------------------------------------------------------------- size


def test_30mb_single_line_in_bounded_memory(tmp_path: Path) -> None:
    path = tmp_path / "one-line.log"
    with open(path, "wb") as handle:
        handle.write(b"[rank0]: " + b"progress 42% |" * (30_000_000 // 14))
        handle.write(b"\n" + FIXTURE)
    run = diagnose(path)
    data = assert_well_behaved(run)
    assert run.max_rss_mib < 200, f"peak RSS {run.max_rss_mib:.0f} MiB for a 30 MB line"
    assert finds_rank2(data), data.get("root_cause")


PEAK_OF_A_DIAGNOSIS = """
import json, sys
from rootrank.diagnose import diagnose_paths
from rootrank.render.json import diagnosis_to_json
data = diagnosis_to_json(diagnose_paths([sys.argv[1]]))
# VmHWM is this process's own peak (ru_maxrss would include the test runner's size, inherited at exec).
peak_kib = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({"data": data, "peak_mib": peak_kib / 1024}))
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="VmHWM is Linux's")
def test_many_long_failure_lines_in_bounded_memory(tmp_path: Path) -> None:
    # A thousand 60 KB lines that all match an entry, from 128 ranks: the evidence kept per rank must not
    # hold the whole lines (they would be 120 MB as text and raw).
    path = tmp_path / "long-lines.log"
    tail = bytes(range(97, 123)) * (60_000 // 26)
    with open(path, "wb") as handle:
        for i in range(1000):
            handle.write(b"[rank%d]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate %d.00 MiB. %s\n"
                         % (i % 128, i, tail))
    done = subprocess.run([sys.executable, "-c", PEAK_OF_A_DIAGNOSIS, str(path)], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "ROOTRANK_JOBS": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert result["data"]["root_cause"]["rule"] == "memory.cuda-oom"
    assert result["peak_mib"] < 100, f"peak RSS {result['peak_mib']:.0f} MiB"
    assert all(len(e["text"]) <= 2000 for e in result["data"]["root_cause"]["evidence"])


def test_30mb_single_line_on_stdin(tmp_path: Path) -> None:
    path = tmp_path / "one-line.log"
    path.write_bytes(bytes(range(32, 127)) * (30_000_000 // 95))
    run = run_cli(["diagnose", "--format", "json", "-"], stdin=path)
    assert_well_behaved(run)
    assert run.max_rss_mib < 200, f"peak RSS {run.max_rss_mib:.0f} MiB"


def test_20000_distinct_rank_prefixes(tmp_path: Path) -> None:
    lines = [f"[rank{r}]:[W ProcessGroupNCCL.cpp:1234] rank {r} step 7 all_reduce waiting\n" for r in range(20_000)]
    lines += [f"[rank{r}]:RuntimeError: oops on rank {r}\n" for r in range(0, 20_000, 7)]
    path = tmp_path / "ranks.log"
    path.write_text("".join(lines))
    run = diagnose(path)
    assert_well_behaved(run)
    assert run.max_rss_mib < 400, f"peak RSS {run.max_rss_mib:.0f} MiB"


def test_a_million_tiny_lines(tmp_path: Path) -> None:
    path = tmp_path / "tiny.log"
    path.write_bytes(b"x\n" * 999_000 + b"\n" * 1000)
    run = diagnose(path)
    assert assert_well_behaved(run)["root_cause"] is None
    assert run.returncode == 0


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.log"
    path.write_bytes(b"")
    run = diagnose(path)
    assert run.returncode == 0, run.stderr
    assert assert_well_behaved(run)["root_cause"] is None


def test_stdin_dash() -> None:
    run = run_cli(["diagnose", "--format", "json", "-"], stdin=FIXTURE)
    assert finds_rank2(assert_well_behaved(run))


def test_empty_stdin() -> None:
    run = run_cli(["diagnose", "--format", "json", "-"], stdin=b"")
    assert run.returncode == 0
    assert_well_behaved(run)


# --------------------------------------------------------------------------- unreadable input: exit 2, one line


@pytest.mark.parametrize("kind", ["missing", "empty-dir", "dev-zero", "fifo", "dir-of-junk"])
def test_unreadable_input_is_one_line(kind: str, tmp_path: Path) -> None:
    if kind == "missing":
        target = tmp_path / "nope.log"
    elif kind == "empty-dir":
        target = tmp_path / "d"
        target.mkdir()
    elif kind == "dev-zero":
        target = Path("/dev/zero")
    elif kind == "fifo":
        target = tmp_path / "pipe.log"
        os.mkfifo(target)
    else:
        target = tmp_path / "d"
        target.mkdir()
        (target / "data.bin").write_bytes(b"\x00" * 10)
    run = diagnose(target, timeout=30)
    assert run.returncode == 2, (run.returncode, run.stdout[:500], run.stderr)
    assert_well_behaved(run)
    assert str(target) in run.stderr


def test_directory_of_per_rank_logs(tmp_path: Path) -> None:
    for rank in range(3):
        (tmp_path / f"rank{rank}.log").write_bytes(b"\xff\x00junk\n" * rank)
    (tmp_path / "rank2.log").write_bytes(FIXTURE)
    assert_well_behaved(diagnose(tmp_path))


def test_unreadable_file(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads everything")
    path = tmp_path / "secret.log"
    path.write_bytes(FIXTURE)
    path.chmod(0)
    run = diagnose(path)
    assert run.returncode == 2
    assert_well_behaved(run)


def test_file_growing_while_read(tmp_path: Path) -> None:
    path = tmp_path / "live.log"
    path.write_bytes(b"[rank0]:step 1 loss 2.0\n" * 200_000)
    stop = threading.Event()
    written = [0]

    def writer() -> None:
        with open(path, "ab") as handle:
            while not stop.is_set() and written[0] < 30_000_000:
                chunk = b"[rank1]:step 2 still training\n" * 5000 + FIXTURE
                handle.write(chunk)
                handle.flush()
                written[0] += len(chunk)
                time.sleep(0.001)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        time.sleep(0.05)
        run = diagnose(path)
    finally:
        stop.set()
        thread.join()
    assert written[0] > 0
    assert_well_behaved(run)


def test_file_truncated_while_read(tmp_path: Path) -> None:
    path = tmp_path / "rotating.log"
    path.write_bytes((b"[rank0]:step 1 loss 2.0\n" * 100_000 + FIXTURE) * 20)
    stop = threading.Event()

    def truncator() -> None:
        while not stop.is_set():
            with open(path, "r+b") as handle:
                handle.truncate(1000)
                handle.seek(0, 2)
                handle.write(FIXTURE)
            time.sleep(0.01)

    thread = threading.Thread(target=truncator)
    thread.start()
    try:
        run = diagnose(path)
    finally:
        stop.set()
        thread.join()
    assert_well_behaved(run)


# --------------------------------------------------------------------------- time


def _folded_literal() -> bytes:
    """A case-insensitive literal of the library (e.g. ': nan'): any anchor the prefilter picks for it is in it."""
    from rootrank.library import load_library

    folded = sorted((p.literal for p in load_library().patterns if p.ignore_case), key=len)
    return (folded[0] if folded else ": nan").encode()


def _training_log(lines: int) -> bytes:
    """A mixed-precision run skipping overflowing steps (a case-insensitive literal on every line), then the
    failure: the prefilter selects every line, and the case-sensitive anchors are all at the very end."""
    literal = _folded_literal()
    return b"".join(b"[rank%d]:step %d | grad_norm%s update skipped | loss scale 65536 | lr 3.0e-04\n"
                    % (i % 4, i, literal) for i in range(lines)) + FIXTURE


def _seconds(path: Path, repeat: int = 2) -> float:
    return min(diagnose(path).seconds for _ in range(repeat))


@pytest.mark.slow
def test_time_is_roughly_linear(tmp_path: Path) -> None:
    empty, small, large = tmp_path / "0.log", tmp_path / "1x.log", tmp_path / "4x.log"
    empty.write_bytes(b"")
    small.write_bytes(_training_log(500))
    large.write_bytes(_training_log(2000))
    t_start = _seconds(empty)
    t_small = max(_seconds(small) - t_start, 0.05)
    budget = 8 * t_small + 1.0
    run = run_cli(["diagnose", "--format", "json", str(large)], timeout=t_start + budget, allow_timeout=True)
    assert not run.killed and run.seconds - t_start < budget, \
        f"1x {t_small:.2f}s, 4x {run.seconds - t_start:.2f}s (startup {t_start:.2f}s)"
    assert assert_well_behaved(run)["root_cause"] is not None


def test_time_is_linear_with_anchors_throughout(tmp_path: Path) -> None:
    """The same with a case-sensitive anchor every few hundred lines (the prefilter's good case)."""

    def log(lines: int) -> bytes:
        out = []
        for i in range(lines):
            out.append(b"[rank%d]:step %d tokens/s 12345 grad_norm 1.23\n" % (i % 8, i))
            if i % 300 == 0:
                out.append(b"[rank%d]:/venv/torch/utils/checkpoint.py:91: UserWarning: None of the inputs have "
                           b"requires_grad=True. Gradients will be None\n" % (i % 8))
        return b"".join(out) + FIXTURE

    empty, small, large = tmp_path / "0.log", tmp_path / "1x.log", tmp_path / "4x.log"
    empty.write_bytes(b"")
    small.write_bytes(log(30_000))
    large.write_bytes(log(120_000))
    t_start = _seconds(empty, 1)
    t_small = max(_seconds(small, 1) - t_start, 0.05)
    run = diagnose(large)
    assert assert_well_behaved(run)["root_cause"] is not None
    assert run.seconds - t_start < 8 * t_small + 1.0, f"1x {t_small:.2f}s, 4x {run.seconds - t_start:.2f}s"


def test_prefilter_scan_is_linear() -> None:
    """Selecting candidate lines with the prefilter alone: 4x the lines, not 16x the time. (Regression: the
    case-sensitive search once ran to its next hit on every call although the folded one hit first.)"""
    from rootrank.diagnose.prefilter import Prefilter

    prefilter = Prefilter(["RARE_EXACT_MARKER"], ["nan!"])

    def select(buf: bytes) -> int:
        if hasattr(prefilter, "candidates"):
            return len(prefilter.candidates(buf, 0, len(buf)))
        pos, hits = 0, 0
        while True:
            hit = prefilter.next_candidate(buf, pos, len(buf))
            if hit < 0:
                return hits
            hits += 1
            pos = buf.find(b"\n", hit) + 1

    def scan(lines: int) -> float:
        buf = b"step | grad nan! skipped\n" * lines + b"RARE_EXACT_MARKER\n"
        start = time.perf_counter()
        assert select(buf) == lines + 1
        return time.perf_counter() - start

    small = min(scan(1000) for _ in range(3))
    large = min(scan(4000) for _ in range(2))
    assert large < 8 * small + 0.01, f"1x {small * 1000:.1f} ms, 4x {large * 1000:.1f} ms"
