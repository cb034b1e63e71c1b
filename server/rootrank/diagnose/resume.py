"""Resume safety: whether the run failed while a checkpoint was being written.

A save that started (DeepSpeed's `Checkpoint <tag> is about to be saved!`, Megatron's `saving checkpoint
at iteration N`, the HF Trainer's `Saving model checkpoint to <dir>`) and was not followed by its
completion before the failure leaves a checkpoint that may be partial. The last save message of the
run decides: a completion (or a training log line after the save, for trainers that log no completion)
means the newest checkpoint is whole. The failure must come soon after the
start (same log within a window of lines, or within a window of time when both lines carry a stamp):
an old, silent save followed by hours of training says nothing about the failure.
"""

from __future__ import annotations

from rootrank.diagnose.collect import Collected
from rootrank.diagnose.fixtext import fill
from rootrank.library import Library
from rootrank.model import Event, Severity

SAVE_RULE = "io.save-interrupted"
WINDOW_LINES = 400  # a sharded save logs a line per file and rank
WINDOW_SECONDS = 900.0


def interrupted_save(collected: Collected, failure: Event | None) -> Event | None:
    """The save start that the failure interrupted, if the log shows one."""
    if failure is None or failure.severity is not Severity.ERROR or failure.rule == SAVE_RULE:
        return None
    last = collected.counts[SAVE_RULE].last if SAVE_RULE in collected.counts else None
    if last is None or not last.pattern.endswith("-start") or last.order > failure.order:
        return None
    if last.line.time is not None and failure.line.time is not None:
        return last if 0 <= failure.line.time - last.line.time <= WINDOW_SECONDS else None
    if last.line.source == failure.line.source:
        return last if 0 <= failure.line.number - last.line.number <= WINDOW_LINES else None
    return None


def resume_note(collected: Collected, failure: Event | None, library: Library) -> str:
    """A paragraph for the fix: the newest checkpoint may be partial, and how to check it before resuming."""
    save = interrupted_save(collected, failure)
    entry = library.get(SAVE_RULE)
    if save is None or entry is None:
        return ""
    where = save.fields.get("checkpoint_dir") or save.fields.get("tag") or save.fields.get("iteration")
    what = f" ({where})" if where else ""
    fields = {**save.fields, "ckpt_dir": save.fields.get("checkpoint_dir", "<ckpt_dir>")}
    return (f"The run failed while a checkpoint{what} was being written (line {save.line.number}: "
            f"`{save.line.text.strip()[:160]}`): the newest checkpoint may be partial ({SAVE_RULE}).\n"
            + fill(entry.fix, fields).replace("<ckpt_dir>", fields["ckpt_dir"]))
