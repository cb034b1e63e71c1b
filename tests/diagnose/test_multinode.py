"""Ranks across nodes and launchers: local ranks mapped to global ranks from what each file says.

Excerpts of the real two-agent runs under tests/fixtures/logs (edited only by dropping lines, to
take one kind of evidence away), and single lines as people paste them.
"""

from __future__ import annotations

from pathlib import Path

from rootrank.diagnose import diagnose_paths, diagnose_text
from rootrank.diagnose.launcher import ChildExit, LauncherReport
from rootrank.ranks import RankSet
from rootrank.render.json import diagnosis_to_json
from rootrank.render.markdown import render_markdown
from rootrank.render.text import render_text
from tests.conftest import FIXTURE_LOGS

INFO_RUN = FIXTURE_LOGS / "process.killed-signal--2node-loglevel-info-rank2-sigsegv-rendezvous-result" / "logs"


def _without_failure_table(src: Path, dst: Path) -> Path:
    """The agent's output up to its ChildFailedError traceback: no `rank : N (local_rank: M)` pairs."""
    lines = src.read_text().splitlines(keepends=True)
    failed = next(i for i, line in enumerate(lines) if "failed (exitcode" in line)
    cut = next(i for i in range(failed, len(lines)) if lines[i].startswith("Traceback"))
    dst.write_text("".join(lines[:cut]))
    return dst


def test_rendezvous_result_maps_local_ranks_without_a_failure_table(tmp_path: Path) -> None:
    files = [str(_without_failure_table(INFO_RUN / name, tmp_path / name)) for name in ("node0.log", "node1.log")]
    assert "rank      :" not in Path(files[1]).read_text()
    d = diagnose_paths(files)
    assert d.root_cause is not None
    assert (d.root_cause.rule, d.root_cause.rank) == ("process.killed-signal", 2)
    assert "rendezvous result" in d.root_cause.why


def test_local_rank_is_not_taken_for_the_global_rank_on_another_node() -> None:
    case = FIXTURE_LOGS / "process.killed-signal--2node-rank3-sigsegv-silent-per-node-logs" / "logs"
    d = diagnose_paths([str(case / "node0.log"), str(case / "node1.log")])
    assert d.root_cause is not None and d.root_cause.rank == 3  # node 1's local rank 1
    assert d.root_cause.confidence is not None and d.root_cause.confidence.rank.level == "high"
    assert {c.rank for c in d.collateral} <= {0, 1, 2}


def test_pasted_command_line_gives_the_node_base() -> None:
    text = ("$ torchrun --nnodes 2 --node-rank 1 --nproc-per-node 4 train.py\n"
            "E1202 03:24:23.214000 17917 torch/distributed/elastic/multiprocessing/api.py:1002] "
            "failed (exitcode: -11) local_rank: 2 (pid: 18052) of binary: /usr/bin/python3\n")
    d = diagnose_text(text)
    assert d.root_cause is not None and d.root_cause.rank == 6
    assert "--node-rank x --nproc-per-node" in d.root_cause.why


def test_single_launcher_line_names_the_rank_single_node_assumed() -> None:
    d = diagnose_text("failed (exitcode: -11) local_rank: 3 (pid: 4321) of binary: /usr/bin/python3")
    root = d.root_cause
    assert root is not None and (root.rule, root.rank) == ("process.killed-signal", 3)
    assert "single node assumed" in root.why
    assert root.confidence is not None and root.confidence.rank.level == "low"


def test_prefixes_of_an_agents_own_file_give_its_first_rank() -> None:
    report = LauncherReport()
    report.prefix_ranks = {"node-b": RankSet({4, 5, 6, 7})}
    report.sources = {"node-b": {"b.log"}, "node-a": {"a.log"}}
    report.sigterm_pids = [("node-a", 10)]
    report.exits = [ChildExit(1, "b.log", local_rank=1, exitcode=-9, pid=11, first_observed=True, agent="node-b"),
                    ChildExit(2, "b.log", local_rank=3, exitcode=-15, pid=13, agent="node-b")]
    assert report.global_rank("node-b", 1) == 5
    assert report.global_rank_how("node-b", 1)[1] == "its workers' [rankN] prefixes"
    report.prefix_ranks = {"node-b": RankSet({6})}  # one traceback: not enough to place the node
    assert report.global_rank("node-b", 1) is None


def test_confidence_in_every_format() -> None:
    d = diagnose_text("[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a "
                      "total capacity of 79.15 GiB of which 1.2 GiB is free.\n[rank0]: RuntimeError: [/pytorch/third_party/"
                      "gloo/gloo/transport/tcp/pair.cc:553] Connection closed by peer [10.0.0.2]:54973\n")
    data = diagnosis_to_json(d)
    conf = data["root_cause"]["confidence"]
    assert set(conf) == {"failure", "rank"}
    assert conf["failure"]["level"] in {"high", "medium", "low"} and conf["failure"]["reason"]
    assert "Confidence" in render_text(d)
    assert "**Confidence:**" in render_markdown(d)


def test_undecided_ranks_come_with_hypotheses_and_a_command() -> None:
    text = "\n".join(
        f"[rank{r}]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] Timed out waiting "
        f"10000ms for recv operation to complete" for r in (2, 3))
    d = diagnose_text(text)
    data = diagnosis_to_json(d)
    if d.root_cause is not None and d.root_cause.confidence is not None and d.root_cause.confidence.rank.level != "high":
        assert len(data["hypotheses"]) >= 2 or d.root_cause.rank is not None
        if len(data["hypotheses"]) >= 2:
            assert data["tell_apart"]


def test_spawn_child_traceback_takes_its_process_index() -> None:
    case = FIXTURE_LOGS / "process.uncaught-exception--mp-spawn-process1-valueerror" / "log.txt"
    d = diagnose_paths([str(case)])
    assert d.root_cause is not None and d.root_cause.rank == 1


def test_amp_warmup_is_quiet_but_a_persisting_nan_is_not() -> None:
    warmup = "\n".join(f"step {i} | loss 11.95 | grad_norm: inf | skipped" for i in range(3))
    warmup += "\n" + "\n".join(f"step {i} | loss {11 - i * 0.1:.2f} | grad_norm: 81.7" for i in range(3, 9))
    d = diagnose_text(warmup)
    assert d.root_cause is None or d.root_cause.severity.value != "error"
    persisting = "\n".join(f"{{'loss': 2.3{i}, 'grad_norm': nan, 'epoch': 0.{i}}}" for i in range(40))
    d = diagnose_text(persisting)
    assert d.root_cause is not None and d.root_cause.rule == "numerics.nan-loss"
    assert diagnose_text("step 0 | loss nan | grad_norm: nan").root_cause is not None


def test_a_nan_gradient_norm_is_no_scaler_warmup_when_the_forward_pass_is_not_finite_either() -> None:
    # A skipped fp16 step leaves the loss finite and non-zero and every other metric finite.
    scaler = "{'loss': 2.31, 'grad_norm': nan, 'learning_rate': 1e-05, 'epoch': 0.0}"
    assert diagnose_text(scaler).root_cause is None
    # The loss at exactly zero after a NaN gradient norm: the weights are NaN already.
    zero = scaler + "\n{'loss': 0.0, 'grad_norm': nan, 'learning_rate': 2e-05, 'epoch': 0.01}"
    d = diagnose_text(zero)
    assert d.root_cause is not None and d.root_cause.rule == "numerics.nan-loss"
    # NaN log-probabilities and rewards beside it (a preference trainer's empty completions).
    forward = "{'loss': 0.69, 'grad_norm': nan, 'rewards/chosen': nan, 'logps/chosen': nan, 'epoch': 0.01}"
    d = diagnose_text(forward)
    assert d.root_cause is not None and d.root_cause.rule == "numerics.nan-loss"
    # A metric named `grad norm` (Megatron's training_log: ' grad norm: {:.3f} |') is a gradient norm too.
    megatron = (" iteration        3/     100 | consumed samples:           96 | elapsed time per iteration (ms): "
                "812.3 | learning rate: 1.500E-06 | global batch size:    32 | lm loss: 9.100000E+00 | loss scale: "
                "65536.0 | grad norm: nan | number of skipped iterations:   1 | number of nan iterations:   0 |")
    assert diagnose_text(megatron).root_cause is None
