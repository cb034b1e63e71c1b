"""The normaliser: escapes, progress bars, CRLF, paste damage."""

from __future__ import annotations

from rootrank.diagnose.normalize import MAX_LINE_CHARS, split_physical


def test_ansi_and_literal_escapes_are_removed() -> None:
    assert split_physical("\x1b[31mRuntimeError\x1b[0m: boom") == ["RuntimeError: boom"]
    assert split_physical("^[[31mRuntimeError^[[0m: boom") == ["RuntimeError: boom"]
    assert split_physical("ESC[1mWarning") == ["Warning"]


def test_carriage_returns_split_progress_bars() -> None:
    parts = split_physical(" 10%|█   | 1/10\r 20%|██  | 2/10\r[rank1]: RuntimeError: x\r\n")
    assert parts[-1] == "[rank1]: RuntimeError: x"
    assert split_physical("line with crlf\r") == ["line with crlf"]
    assert split_physical("a^Mb") == ["a", "b"]


def test_glued_rank_prefix_after_a_progress_bar_starts_a_new_line() -> None:
    parts = split_physical("[gpu187:0]:  6%|▌ | 7.93s/it][gpu187:2]:torch.cuda.OutOfMemoryError: CUDA out of memory.")
    assert parts[-1] == "[gpu187:2]:torch.cuda.OutOfMemoryError: CUDA out of memory."


def test_huge_lines_are_bounded() -> None:
    line = "x" * (MAX_LINE_CHARS * 4) + "RuntimeError: tail"
    (part,) = split_physical(line)
    assert len(part) <= MAX_LINE_CHARS + 10 and part.endswith("RuntimeError: tail")


def test_control_characters_and_nul_bytes_are_dropped() -> None:
    assert split_physical("a\x00b\x07c") == ["abc"]


def test_a_glog_record_glued_after_a_tqdm_bar_is_a_line_of_its_own() -> None:
    # MiniCPM-V#312: torchrun's agent line goes on from the bar's last state, which ends without a newline.
    bar = "Loading checkpoint shards:  14%|███████                                          | 1/7 [00:13<01:22, 13.68s/it]"
    agent = ("W0629 00:06:21.246000 140229302286144 torch/distributed/elastic/multiprocessing/api.py:851] Sending "
             "process 29734 closing signal SIGTERM")
    assert split_physical(bar + agent) == [bar, agent]
    # A time-stamped record (XLA's, from a fixture's real log) after a real tqdm bar's last state.
    done = "100%|████████████████████████| 50/50 [00:01<00:00, 40.67it/s]"
    xla = ("2024-10-09 15:47:38.568412: E external/xla/xla/tsl/distributed_runtime/coordination/"
           "coordination_service.cc:1170] /job:jax_worker/replica:0/task:0 has been set to ERROR in coordination "
           "service")
    assert split_physical(done + xla) == [done, xla]
    assert split_physical("throughput 3.2s/it]W0629 is a word") == ["throughput 3.2s/it]W0629 is a word"]
