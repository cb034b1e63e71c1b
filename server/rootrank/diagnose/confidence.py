"""How sure a diagnosis is, for the failure and for the rank, and what to run when it is not sure.

Calibrated on purpose: `high` is given only where the log itself proves the answer (the failing
process printed a specific message under its own rank, and no other rank shows a failure of its
own); whatever rests on order of appearance across files, on the launcher's second-resolution
account, on a fallback entry or on an assumption (single node) is `medium` or `low`. When the rank
is not decided, the open readings are listed as hypotheses with one read-only command that tells
them apart.
"""

from __future__ import annotations

from rootrank.diagnose.collect import Collected, is_error_cause
from rootrank.diagnose.initiator import (
    TIMEOUT_RULE,
    UNEXPLAINED_TRACEBACK,
    InitiatorFinder,
    Verdict,
    is_launcher_report,
    is_narrated,
)
from rootrank.diagnose.launcher import TEARDOWN_EXITCODE
from rootrank.library import Entry, Library
from rootrank.model import Confidence, Event, Hypothesis, Role, Severity, Sureness

GENERIC_PRIORITY = 10  # fallback entries (uncaught exception, child failed) name the failure loosely
ENDING_LINES = 2  # lines (a blank one, a shell prompt) after a log's last timeout that still count as its end

# One read-only command per kind of question, the first whose rule prefix fits.
_TELL_APART = (
    (("memory.host-oom-kill", "process.killed-signal"),
     "dmesg -T | grep -i -E 'killed process|out of memory|oom|segfault|xid'   # on each node"),
    (("hardware.",), "nvidia-smi -q -d ECC,PAGE_RETIREMENT   # on the node of each candidate rank"),
    (("distributed.rank-stalled", "distributed.collective-timeout", "distributed.nccl-watchdog-stuck"),
     "py-spy dump --pid <pid of each candidate rank>   # while the job hangs: the rank outside the collective"),
    (("distributed.",),
     "re-run with TORCH_DISTRIBUTED_DEBUG=DETAIL TORCH_CPP_LOG_LEVEL=INFO and compare the ranks' last collective"),
    (("memory.",), "nvidia-smi --query-gpu=index,memory.used,memory.total --format=csv   # on each node"),
)


def tell_apart(rules: list[str]) -> str:
    for prefixes, command in _TELL_APART:
        if any(rule.startswith(prefixes) for rule in rules):
            return command
    return "re-run with TORCH_DISTRIBUTED_DEBUG=DETAIL and PYTHONFAULTHANDLER=1, one log file per rank (torchrun --log-dir)"


class Assessor:
    def __init__(self, collected: Collected, finder: InitiatorFinder, library: Library) -> None:
        self.col = collected
        self.finder = finder
        self.library = library

    def confidence(self, verdict: Verdict) -> Confidence:
        return Confidence(failure=self._failure(verdict), rank=self._rank(verdict))

    # ------------------------------------------------------------------ failure

    def _failure(self, verdict: Verdict) -> Sureness:
        cause = verdict.cause
        if cause is None or verdict.rule is None:
            return Sureness("low", "nothing in the log names a failure")
        entry = self.library.get(verdict.rule)
        if verdict.decided_by == "exited on its own":
            return Sureness("medium", "from the launcher's exit status and the other ranks' losses; the rank "
                                      "printed no error, so why it exited is not in the log")
        if verdict.decided_by == InitiatorFinder.LEFT_WAITING:
            return Sureness("medium", "the rank's own message says only that its peers went away; that they had "
                                      "finished (a collective mismatch) is inferred from the launcher's account")
        if verdict.decided_by == InitiatorFinder.STOPPED_AFTER_WARNING:
            return Sureness("medium", "the process stopped in a traceback cut before its exception, just after this "
                                      "warning; that the warning's condition raised it is inferred")
        if verdict.decided_by == "the launcher's exit report only":
            return Sureness("low", "only the launcher's exit status is in the log; the worker's own error is not")
        if cause.pattern == UNEXPLAINED_TRACEBACK and cause.fields.get("exception"):
            return Sureness("medium", f"a traceback that ends in an exception no entry names "
                                      f"(`{cause.fields['exception']}`): the process raised it; why is in its message")
        if cause.pattern == UNEXPLAINED_TRACEBACK:
            return Sureness("low", "a traceback whose last line names no known exception (cut off, or a message "
                                   "without its class): only its frames say where the process failed")
        if cause.role is Role.CONTEXT and cause.severity is Severity.ERROR:
            return Sureness("medium", "a launcher's summary of a failed child: the child's own error is not in the log")
        if cause.severity is not Severity.ERROR and cause.role is Role.SYMPTOM:
            return Sureness("low", "only warnings of what a rank suffered, which runs that finished print too")
        if cause.severity is not Severity.ERROR or cause.role is Role.CONTEXT:
            return Sureness("medium", "only warnings: nothing stopped the run")
        if verdict.rule != cause.rule:
            return Sureness("medium", f"inferred from what the other ranks suffered ({cause.rule}), "
                                      f"not printed by the failing rank")
        if cause.role is Role.SYMPTOM:
            return Sureness("medium", "only what the ranks suffered is in the log")
        if is_launcher_report(cause):
            return Sureness("medium", "known only from the launcher's account of the exit, not from the "
                                      "process's own output")
        if "frame" in cause.pattern:
            return Sureness("medium", "read from the innermost traceback frames; the exception line is not in the log")
        if is_narrated(cause):
            return Sureness("medium", "quoted in a person's sentence, not printed by the process itself")
        if entry is not None and entry.priority <= GENERIC_PRIORITY:
            return Sureness("medium", "a generic entry: no more specific entry matched the message")
        alone = self._alone(cause, entry)
        if alone:
            return Sureness("medium", f"this message alone, with nothing else of {cause.rule} in the log; "
                                      f"it also comes from {alone}")
        rivals = self._rival_rules(verdict)
        if rivals:
            return Sureness("medium", f"other failures of their own on other ranks: {', '.join(sorted(rivals))}")
        return Sureness("high", f"the message matched {cause.rule} ({cause.pattern}) in the failing process's own output")

    def _alone(self, cause: Event, entry: Entry | None) -> str:
        """What else prints the cause's message, when its pattern says (`alone:`) and no other pattern of
        the entry matched anywhere in the log; else empty."""
        if entry is None:
            return ""
        pattern = next((p for p in entry.patterns if p.name == cause.pattern), None)
        if pattern is None or not pattern.alone:
            return ""
        vague = {p.name for p in entry.patterns if p.alone}
        count = self.col.counts.get(cause.rule)
        kept = (count.first, count.last) if count is not None else ()
        seen = any(e is not None and e.rule == cause.rule and e.pattern not in vague
                   for e in (*self.col.units, *kept))
        return "" if seen else pattern.alone

    def _own_causes(self) -> list[Event]:
        """The error causes decide() weighs: not a launcher's quote, nor its line about a child that had
        already printed what it suffered."""
        return self.finder.without_consequences(
            [u for u in self.col.units if not u.line.quoted and is_error_cause(u)])

    def _rival_rules(self, verdict: Verdict) -> set[str]:
        out: set[str] = set()
        for unit in self._own_causes():
            if unit.rule == verdict.rule:
                continue
            entry = self.library.get(unit.rule)
            if entry is not None and entry.priority <= GENERIC_PRIORITY:
                continue
            if self.finder.event_rank(unit) != verdict.rank:
                out.add(unit.rule)
        return out

    # ------------------------------------------------------------------ rank

    def _rank(self, verdict: Verdict) -> Sureness:
        if verdict.rank is None:
            if verdict.undecided or verdict.candidates:
                return Sureness("low", "the log does not decide the rank")
            return Sureness("low", "no rank: a single process, or output without rank information")
        how = verdict.decided_by
        if how.startswith("earliest cause"):
            return self._earliest(verdict)
        if how == "named by the other ranks":
            return Sureness("medium", "most reports of the other ranks name it")
        if how == "named by the launcher":
            return Sureness("medium", "the launcher's line names it (its task number is the rank when it started "
                                      "one task per rank)")
        if how == "named by a peer report":
            return Sureness("medium", "a peer report names it")
        if how.startswith("odd one out"):
            return Sureness("medium", "the only rank waiting in a different collective")
        if how == "missing from the timeouts":
            if self._ends_at_the_timeouts():
                return Sureness("low", "the one rank that printed no timeout, but the log ends at the timeouts "
                                       "(no abort, no launcher summary after them): the rest of its output, that "
                                       "rank's timeout too, may just be cut off")
            return Sureness("medium", "the one rank that printed no timeout; a rank whose output is missing "
                                      "from the log looks the same")
        if how == InitiatorFinder.NOT_WAITING:
            return Sureness("medium", "where each rank was when it was interrupted: it was outside torch, the "
                                      "others waited in torch or only suffered")
        if how == InitiatorFinder.IDLE:
            return Sureness("medium", "its own progress report shows no collective in flight while the others "
                                      "timed out in one")
        if how == InitiatorFinder.LEFT_WAITING:
            return Sureness("medium", "the one rank still in a collective when the others had exited cleanly; a "
                                      "worker of another node that exited first would look the same")
        if how == "exited on its own":
            return Sureness("medium", "the one rank that suffered nothing; its launcher reports its exit status")
        if how == "behind in sequence numbers":
            return Sureness("medium", "the rank that completed the fewest collectives")
        if how == "launcher exit of the process that printed it":
            return Sureness("medium", "the message had no rank prefix; the launcher's exit line gave the rank")
        if how == "only a launcher's summary":
            return Sureness("medium", "the launcher's report of the failed child names it; the child's own error is not in the log")
        if how == "the launcher's exit report only":
            return Sureness("low", "only the launcher's account of which child exited with an error")
        if how == "launcher exit" or how == "launcher exit order":
            return Sureness("low" if "single node assumed" in " ".join(verdict.reasons) else "medium",
                            "only the launcher's account of which child exited first")
        return Sureness("low", f"decided by {how}")

    def _ends_at_the_timeouts(self) -> bool:
        """A single log whose last lines are the timeouts themselves: a paste cut short, or a job still
        hanging (a finished one goes on with the watchdog's abort and the launcher's summary)."""
        last = self.col.counts[TIMEOUT_RULE].last if TIMEOUT_RULE in self.col.counts else None
        return (last is not None and len(self.col.sources) == 1
                and last.line.number >= self.col.lines - ENDING_LINES
                and not any(unit.order > last.order for unit in self.col.units))

    def _earliest(self, verdict: Verdict) -> Sureness:
        cause = verdict.cause
        assert cause is not None
        others = {r for r, _, _ in verdict.candidates}
        ranked = self._cause_ranks()
        rivals = ranked - {verdict.rank}
        if cause.line.rank is None:
            agent = self.finder.agent_of_event(cause)
            local = cause.fields.get("local_rank")
            if local is None and cause.line.local_rank is not None:
                local = str(cause.line.local_rank)  # a prefix's local rank (`[gpu187:0]:`, `[default3]:`)
            mapped = ""
            if local is not None and local.isdigit():
                _, mapped = self.finder.launcher.global_rank_how(agent, int(local))
            # Other children the launcher saw fail on their own (not its own teardown's SIGTERM).
            others_failed = {self.finder.global_rank(e.agent, e.local_rank) for e in self.finder.launcher.exits
                             if e.local_rank is not None and e.exitcode not in (None, 0, TEARDOWN_EXITCODE)}
            others_failed -= {verdict.rank, *self.finder.suffering_ranks()}  # victims exit too, having said why
            if mapped == "failure table" and not rivals and not others_failed:
                return Sureness("high", "its agent's failure table pairs the local rank with this global rank, "
                                        "and no other rank shows a failure of its own")
            if mapped == "single node assumed":
                return Sureness("low", "a local rank from the launcher; single node assumed")
            return Sureness("medium", f"a local rank from the launcher, mapped by {mapped or 'its agent'}")
        if rivals or others:
            if "timestamp" in verdict.decided_by:
                return Sureness("medium", f"the earliest time stamp among the ranks with a failure of their own "
                                          f"({len(rivals) + 1})")
            if "first observed failure" in verdict.decided_by:
                return Sureness("low", "several ranks died, known only from the launcher's table; its first "
                                       "observed failure decided")
            return Sureness("low", "several ranks show a failure of their own; order of appearance decided")
        if is_launcher_report(cause):
            return Sureness("medium", "the launcher's report of its exit names it; the rank's own output is not in the log")
        if len(self.col.ranks_seen) <= 1:
            # One rank's output alone (a paste of rank 0's lines, one per-rank file): the others may have
            # failed first, or all alike, without a line of theirs here to say so.
            return Sureness("medium", "the only rank whose output is in the log; whether another rank "
                                      "failed first cannot be told from it")
        cut = sorted(r for r in self.col.unexplained_ranks if r != verdict.rank)
        if cut:
            return Sureness("medium", f"rank(s) {', '.join(map(str, cut[:8]))} printed a traceback of their own "
                                      f"too, whose exception line is cut off or names nothing known: they may have "
                                      f"failed the same way, or first")
        return Sureness("high", "the only rank with a failure of its own, named by its own output")

    def _cause_ranks(self) -> set[int]:
        out: set[int] = set()
        for unit in self._own_causes():
            rank = self.finder.event_rank(unit)
            if rank is not None:
                out.add(rank)
        return out

    # ------------------------------------------------------------------ hypotheses

    def hypotheses(self, verdict: Verdict, confidence: Confidence) -> tuple[tuple[Hypothesis, ...], str]:
        """The readings left open when the rank is not sure, and the command that decides."""
        if confidence.rank.level == "high" or (verdict.rank is None and not verdict.candidates):
            return (), ""
        out: list[Hypothesis] = []
        if verdict.rank is not None and verdict.rule is not None:
            out.append(Hypothesis(verdict.rank, verdict.rule, _for(verdict), confidence.rank.reason))
        for rank, rule, why in verdict.candidates:
            if rank < 0 or any(h.rank == rank for h in out):
                continue
            against = (f"rank {verdict.rank} was chosen: {verdict.decided_by}" if verdict.rank is not None
                       else "nothing in the log sets it apart from the other candidates")
            out.append(Hypothesis(rank, rule, why, against))
        if len(out) < 2:
            return tuple(out) if verdict.rank is None else (), ""
        return tuple(out), tell_apart([h.rule for h in out])


def _for(verdict: Verdict) -> str:
    return "; ".join(verdict.reasons) or verdict.decided_by

