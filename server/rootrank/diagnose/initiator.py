"""Choosing the initiating rank, and saying which signal decided it.

Causes beat symptoms; among causes the earliest wins (timestamps where every candidate has one, else
order of appearance). When no rank shows a cause, the ranks that suffered tell who did not: a rank
missing from the set of timed-out ranks, the odd one out in the collective they wait in, the rank
that is behind in sequence numbers, or a culprit named by desync/flight-recorder reports. The
launcher's own account (first exit, survivors at SIGTERM, the elastic "Root Cause") is weak evidence:
it is second-resolution and often names a victim. When nothing decides, the candidates are listed.

Host-level evidence (a GPU Xid in a node's kernel log, a node the scheduler lost) comes before all of
that: it names a host, not a rank, and the ranks running on that host become the initiator or its
candidates (see `HostEvidence`).
"""

from __future__ import annotations

import functools
import heapq
import itertools
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from rootrank.diagnose.collect import (
    INTERRUPTED_RULE,
    Collected,
    grouped_ranks,
    is_error_cause,
    is_frame_line,
)
from rootrank.diagnose.launcher import TEARDOWN_EXITCODE, LauncherReport, agent_of
from rootrank.model import Event, Role, Severity, ranks_text
from rootrank.ranks import RankSet

STALLED_RULE = "distributed.rank-stalled"
PEER_EXITED_RULE = "distributed.peer-exited"
MISMATCH_RULE = "distributed.collective-mismatch"
TIMEOUT_RULE = "distributed.collective-timeout"
HOST_KILL_RULE = "memory.host-oom-kill"
SIGNAL_RULE = "process.killed-signal"
EXITED_RULE = "process.exited-nonzero"
NCCL_ERROR_RULE = "distributed.nccl-error"
# A traceback frame inside torch's communication or backward pass: a rank stopped there waited for the others.
_WAITING_FRAME = re.compile(r"torch[/\\](?:distributed|autograd|nn[/\\]parallel|_tensor\.py)|c10d")
GENERIC_RULE = "process.uncaught-exception"  # any exception, named by no entry of its own
UNEXPLAINED_TRACEBACK = "unexplained-traceback"  # the pattern name of a traceback no entry names
CAUSE_SIGNALS = {"SIGKILL", "SIGSEGV", "SIGBUS", "SIGFPE", "SIGILL"}
NAN_RULE = "numerics.nan-loss"
OOM_KILLERS = {"memory.host-oom-kill", "memory.container-oom"}  # entries whose `pid` names a process killed for memory
MEMORY_KILLS = OOM_KILLERS | {"memory.slurm-oom"}  # a process killed for memory, by whichever keeper
STATED_WITHIN = 64  # lines from a frame matched by an entry to the exception line of the same traceback
# Lines below a generic error where its message may go on with the error it wraps (transformers' "Failed to
# import X because of the following error (look up to see its traceback):" + the loader's text; NCCL's
# "unhandled system error" + "Last error:" + the detail), counted as the terminal printed them: a log
# wrapped at 80 columns puts NCCL's detail six rows below.
WRAPPED_WITHIN = 8
STOPPED_WITHIN = 8  # lines from a warning to a cut traceback it is taken to have raised
WRAPPING_RULES = frozenset({GENERIC_RULE, NCCL_ERROR_RULE})  # errors whose message can carry a named one
# A last line this short past its rank prefix was cut before its message (a c10d glog header alone,
# `[E419 10:42:28.887728774 ProcessGroupNCCL.cpp:1785] `, is about 55 characters).
CUT_LINE_CHARS = 64
MAX_CANDIDATES = 64  # ranks named one by one as candidates; all of them are in the undecided text, as ranges
AMP_WARMUP_STEPS = 16  # GradScaler halves 65536 at most 16 times before the scale reaches 1
# A finite loss on the line: `loss 2.3`, `'train_loss': 2.3`, `lm_loss=2.3`, or a cross-entropy/NLL column
# (`ce=0.090`, audiocraft's epoch summary) written with a separator.
_FINITE_LOSS = re.compile(r"(?:\b[a-z_]{0,20}loss'?\"?\s?[:=]?|\b(?:ce|nll|xent)'?\"?\s?[:=])\s?"
                          r"(?P<value>-?\d+(?:\.\d+)?(?:e[-+]?\d+)?)\b", re.IGNORECASE)
# A loss scaler's current scale on the line (`grad_scale=289800.192`, `'loss_scale': 1024.0`): the scaler is
# on, and a step whose gradients overflowed was skipped, not applied.
_SCALER_SCALE = re.compile(r"\b(?:grad|loss)_scale'?\"?\s?[:=]\s?(?P<value>\d+(?:\.\d+)?(?:e[-+]?\d+)?)\b", re.IGNORECASE)
# A metric logged as non-finite: `'rewards/chosen': nan`, `grad norm: inf`, `loss=nan` (its name, with a
# `grad ` before it kept: Megatron's `grad norm`).
_NONFINITE_METRIC = re.compile(r"""(?:^|[\s,{(|'"])(?P<name>(?:grad[ _])?[A-Za-z_][\w/.\-]*)['"]?\s?[:=]\s?['"]?[-+]?(?:nan|inf)\b""",
                               re.IGNORECASE)


def _scaler_overflow_line(text: str) -> bool:
    """Whether the line reads as an fp16 loss scaler's skipped step: a finite, non-zero loss (or, with no
    loss on the line, the scaler's own non-zero scale) and no non-finite value but gradient norms. An
    overflow leaves the forward pass alone, so a loss of exactly zero (the weights are NaN already; the
    entry's "all later losses NaN (or 0)") or NaN log-probs, rewards or logits on the same line are the
    divergence itself, not the scaler calibrating."""
    loss = _FINITE_LOSS.search(text)
    if loss is not None:
        if float(loss["value"]) == 0:
            return False
    elif (scale := _SCALER_SCALE.search(text)) is None or float(scale["value"]) == 0:
        return False
    return all("grad" in m["name"].lower() for m in _NONFINITE_METRIC.finditer(text))


# Pattern names of launcher lines about a child (torchrun, spawn, DeepSpeed, old launch), by convention.
LAUNCHER_PATTERN_PREFIXES = ("elastic-", "spawn-", "deepspeed-minus", "calledprocesserror", "horovodrun-")


# Entries whose evidence is about a machine rather than a process: what they report stops every rank
# on that host, so they outrank what the ranks on other hosts print afterwards.
# The fabric's errors (an InfiniBand completion error, a failed verbs call, EFA/UCX) are about the host's
# adapter or link: they stop the ranks there first. A container's OOM kill and Ray's memory monitor name the
# pod or node whose memory ran out.
HOST_LEVEL_CATEGORIES = {"hardware", "network"}
HOST_LEVEL_RULES = {"infra.slurm-node-failure", "infra.k8s-node-not-ready", "ray.node-dead", "memory.container-oom",
                    "ray.oom-killed"}
PROCESS_LEVEL_RULES = {"hardware.cuda-kernel-fault"}  # printed by the rank itself, about its own kernels
HOST_FIELDS = ("host", "node_address", "node_ip")  # captures that name the failed machine (or pod)
# NCCL's debug prefix "<host>:<pid>:<tid> [<cuda device>] ": the printing host (the bracket is a device, not a rank).
# It may follow a launcher's tag with no space: "[1,23]<stdout>:ip-172-32-45-165:72593:73427 [7] NCCL WARN ...".
NCCL_PREFIX = re.compile(r"(?:^|[\s:>\]])(?P<host>[A-Za-z0-9][\w.-]{0,63}):(?P<pid>\d{1,9}):\d{1,9} \[\d{1,3}\] ")


@dataclass
class Verdict:
    rank: int | None
    cause: Event | None  # the event that names the failure (may be on another rank than `rank`)
    rule: str | None  # the failure's entry id
    decided_by: str
    reasons: list[str] = field(default_factory=list)
    candidates: list[tuple[int, str, str]] = field(default_factory=list)  # (rank, rule, why)
    undecided: str = ""
    host: str | None = None  # the machine the evidence names, when it names one


class InitiatorFinder:
    def __init__(self, collected: Collected, launcher: LauncherReport) -> None:
        self.col = collected
        self.launcher = launcher
        self._warmup: bool | None = None

    # ------------------------------------------------------------------ helpers

    def global_rank(self, agent: str | None, local_rank: int) -> int | None:
        return self.launcher.global_rank(agent, local_rank)

    @staticmethod
    def agent_of_event(event: Event) -> str | None:
        """The launcher agent (host, pid or file) that printed an event's line."""
        return agent_of(event.line.host, event.line.pid, event.line.source)

    def _local_to_global(self, event: Event, local: int) -> int | None:
        """An agent line's local rank as a global rank: through the agent that printed it, else the
        one agent of the same file, else the one answer all agents agree on."""
        launcher = self.launcher
        rank = self.global_rank(self.agent_of_event(event), local)
        if rank is not None or len(launcher.agents) <= 1:
            return rank
        same_file = [a for a, files in launcher.sources.items() if event.line.source in files]
        if len(same_file) == 1:
            rank = self.global_rank(same_file[0], local)
            if rank is not None:
                return rank
        ranks = {self.global_rank(a, local) for a in launcher.agents} - {None}
        return ranks.pop() if len(ranks) == 1 else None

    def event_rank(self, event: Event) -> int | None:
        """An event's global rank: its own, else the local rank it names through the agent that printed it. A
        rank that reports waiting for others (`waiter`) without naming one is none of them: no rank."""
        if _waits_unnamed(event):
            return None
        if event.rank is not None:
            return event.rank
        local = event.fields.get("local_rank")
        if local is not None and local.isdigit():
            return self._local_to_global(event, int(local))
        if event.line.local_rank is not None:
            return self._local_to_global(event, event.line.local_rank)
        return None

    def survivor_ranks(self) -> set[int]:
        """Global ranks of the workers the launcher SIGTERMed when it tore the group down."""
        ranks = {self.global_rank(agent, lr) for agent, lr in self.launcher.survivors()}
        return {r for r in ranks if r is not None}

    def _world(self) -> RankSet:
        world = RankSet(self.col.ranks_seen)
        world.update(self.launcher.all_ranks())
        if len(self.launcher.agents) <= 1:
            # Per-rank files named by local rank (torchrun --log-dir .../attempt_0/3/stdout.log) on one node.
            world.update(r for r in (self.global_rank(None, lr) for lr in self.col.local_ranks_seen) if r is not None)
        if self.launcher.world_size:
            world.add_range(0, self.launcher.world_size)
        return world

    def without_consequences(self, causes: list[Event]) -> list[Event]:
        """`causes` without the launcher's lines about a rank that printed its own symptoms: a death the
        launcher reports (exit -6 after a watchdog abort, say) is then a consequence, not a cause of its own."""
        units = [u for u in self.col.units if not u.line.quoted and not self.amp_warmup(u)]
        suffering = RankSet(u.line.rank for u in units if u.role is Role.SYMPTOM and u.line.rank is not None)
        suffering |= grouped_ranks(self.col, lambda e: not self.amp_warmup(e))
        return [e for e in causes if e.line.rank is not None or self.event_rank(e) not in suffering]

    def without_watchdog_aborts(self, causes: list[Event], units: list[Event]) -> list[Event]:
        """`causes` without the aborts a collective timeout explains: the NCCL watchdog ends a timed-out
        process by throwing from its own thread, so the process aborts (`Aborted (core dumped)`, SIGABRT,
        exit -6) after its timeout. An abort of a rank that reported the timeout, or of a process the log
        gives no rank, is that; an abort of a rank that reported none stays a cause of its own."""
        timed_out = [u for u in units if u.rule == TIMEOUT_RULE and u.severity is Severity.ERROR]
        if not timed_out or not any(_is_abort(e) for e in causes):
            return causes
        waiting = RankSet(r for r in (self.event_rank(u) for u in timed_out) if r is not None)
        return [e for e in causes if not _is_abort(e) or ((rank := self.event_rank(e)) is not None
                                                          and rank not in waiting)]

    # ------------------------------------------------------------------ decision

    def decide(self) -> Verdict:
        units = [u for u in self.col.units if not u.line.quoted and not self.amp_warmup(u)]
        causes = [u for u in units if is_error_cause(u)]
        # An error a person quotes in a sentence of an issue ("If I try X I get this error: ...") counts only
        # when nothing printed names one: it may be an earlier attempt, not what ended this run.
        causes = [u for u in causes if not is_narrated(u)] or causes
        causes = _unexplained(causes)
        if not causes:
            causes = [u for u in self.col.units if u.line.quoted and is_error_cause(u)]
        causes = self.without_consequences(causes)
        causes = self.without_watchdog_aborts(causes, units)
        if causes:
            on_host = HostEvidence(self).decide(causes, units)
            if on_host is not None:
                return on_host
            return self._from_causes(causes, units)
        # Only what ranks suffered as errors points at a stalled peer; warning-level symptoms (an NCCL
        # WARN line, a store shutting down at exit) also appear in runs that finished.
        symptoms = [u for u in units if u.role is Role.SYMPTOM and u.severity is Severity.ERROR]
        if symptoms:
            return self._from_symptoms(symptoms)
        soft = [u for u in units if u.role is Role.CAUSE]
        if soft:
            best = max(soft, key=lambda e: (e.severity is Severity.WARNING, -e.order))
            return self._stopped_after(soft) or Verdict(rank=self.event_rank(best), cause=best, rule=best.rule,
                                                        decided_by="no failure; the most important warning")
        # Warnings of what a rank suffered (a lost TCPStore, an NCCL WARN) and nothing else: also printed by
        # runs that finished, so not a failure, but the one thing the log holds; the printer is a victim.
        suffered = [u for u in units if u.role is Role.SYMPTOM and u.severity is Severity.WARNING]
        if suffered:
            first = min(suffered, key=lambda e: e.order)
            return Verdict(rank=None, cause=first, rule=first.rule, decided_by="no failure; a warning of what a rank suffered",
                           undecided="only warnings of what ranks suffered are in the log; they name no rank "
                                     "that failed")
        # The launcher's report of its children: its own lines, else the lines of its failure table (quoted:
        # a paste that kept the table without the `ChildFailedError` line above it).
        reported = units
        if not any(u.role is Role.CONTEXT and u.severity is Severity.ERROR for u in units):
            reported = [u for u in self.col.units if u.line.quoted and not self.amp_warmup(u)]
        exited = self._launcher_exit_only(reported)
        if exited is not None:
            return exited
        # A launcher's error summary with nothing of the child's own (the paste kept only the last lines):
        # the child failed, but its reason is not in this log. Said as such, not as "no failure".
        summaries = [u for u in reported if u.role is Role.CONTEXT and u.severity is Severity.ERROR]
        if summaries:
            first = min(summaries, key=lambda e: e.order)
            rank = self.event_rank(first)
            why = ""
            if rank is None:
                # The summary's own line names no rank, but its failure table may (`rank : 1 (local_rank: 1)`
                # under "Root Cause (first observed failure)").
                rank, why = self._rank_from_launcher()
            return Verdict(rank=rank, cause=first, rule=first.rule, reasons=[why] if why else [],
                           decided_by="only a launcher's summary",
                           undecided="the log holds only the launcher's report that a child process failed; the "
                                     "child's own error (its traceback or signal) is not in it")
        unexplained = self.col.unexplained_traceback
        if unexplained is not None:
            # A traceback no entry names: the paste ends inside its frames, or its exception line is one no
            # pattern reads (a message without its class). It still ended the process that printed it.
            line, order = unexplained
            fields = exception_of_last_line(line.text)
            event = Event(rule=GENERIC_RULE, role=Role.CAUSE, severity=Severity.ERROR, line=line, fields=fields,
                          pattern=UNEXPLAINED_TRACEBACK, order=order)
            said = (f"ends in `{fields['exception']}`, an exception" if fields else "whose last line") + \
                f" (line {line.number}) no entry names"
            return Verdict(rank=self.event_rank(event), cause=event, rule=GENERIC_RULE,
                           decided_by="single process or no rank prefix" if line.rank is None else "its own traceback",
                           reasons=[f"a Python traceback {said}"])
        return Verdict(rank=None, cause=None, rule=None, decided_by="nothing matched")

    def _rank_of_traceback_after(self, event: Event) -> tuple[int | None, str]:
        """The rank of the one traceback no event names, when it starts right below an unprefixed error
        (a CUDA kernel's assertion, printed by the driver without the rank's prefix, then that rank's
        Python traceback, cut before its exception)."""
        header = self.col.unexplained_header
        ranks = self.col.unexplained_ranks
        if header is None or header.rank is None or len(ranks) != 1 or header.rank not in ranks:
            return None, ""
        if header.source != event.line.source or not 0 < header.number - event.line.number <= STOPPED_WITHIN:
            return None, ""
        return header.rank, (f"the traceback right below it (line {header.number}) is rank {header.rank}'s, the "
                             f"only rank with one")

    def _stopped_after(self, warnings: list[Event]) -> Verdict | None:
        """The last warning a process printed before a traceback cut before its exception (the paste ends
        in its frames) that follows it within a few lines: the process stopped there, and the warning is
        the last thing it said of why (Dynamo's recompile limit, then FailOnRecompileLimitHit under
        fullgraph=True; fairseq's loss scale halving, then its FloatingPointError)."""
        unexplained = self.col.unexplained_traceback
        header = self.col.unexplained_header
        # A real traceback's header: frames alone may be the message's own (Dynamo's "from user code:").
        if (unexplained is None or header is None
                or not header.text.lstrip().startswith("Traceback (most recent call last)")):
            return None
        line, _order = unexplained
        head = header.number
        before = [w for w in warnings if w.line.source == header.source == line.source and w.line.rank == line.rank
                  and 0 < head - w.line.number <= STOPPED_WITHIN]
        if not before:
            return None
        warning = max(before, key=lambda w: w.line.number)
        said = warning.line
        stopped = Event(rule=warning.rule, role=warning.role, severity=Severity.ERROR, line=said,
                        fields=warning.fields, pattern=warning.pattern, order=warning.order)
        return Verdict(rank=self.event_rank(warning), cause=stopped, rule=warning.rule,
                       decided_by=self.STOPPED_AFTER_WARNING,
                       reasons=[f"a traceback starts at line {head}, {head - said.number} lines after this warning, and "
                                f"the log ends in its frames (line {line.number}): the process stopped there"])

    def _launcher_exit_only(self, units: list[Event]) -> Verdict | None:
        """A launcher reports a worker's error exit and nothing else failed in the log (an excerpt that
        keeps only the launcher's lines, or a run whose worker output went elsewhere): the failure is
        that exit, not "no failure". Its rank is the launcher's; the cause is not in the log."""
        reports = [u for u in units if u.role is Role.CONTEXT and u.severity is Severity.ERROR
                   and (u.fields.get("exitcode") or "").isdigit() and int(u.fields["exitcode"]) > 0]
        if not reports:
            return None
        rank, why = self._rank_from_launcher()
        named = reports[0].fields.get("peer") or ""
        # One rank, not the first of a range or list (srun's `tasks 2-3:`, `tasks 1,3:` name no single rank).
        if rank is None and named.isdigit() and not re.search(rf"\b{named}[-,]\d", reports[0].line.text):
            # The launcher's line names the rank itself (Composer's `Rank 1 crashed with exit code 1.`).
            rank, why = int(named), f"the launcher's line names rank {named}"
        code = reports[0].fields["exitcode"]
        reasons = [f"the launcher reports a worker exit with status {code} (not a signal) at line "
                   f"{reports[0].line.number}, and the log holds no error of the worker's own: its traceback is "
                   f"elsewhere (above this excerpt, in --log-dir/--redirects files, or the error_file)"]
        if why:
            reasons.append(why)
        # A launcher with an entry of its own (Accelerate's CalledProcessError, DeepSpeed's runner) keeps it: its
        # fix speaks of that launcher; torchrun's generic child-failure line is the worker's nonzero exit.
        rule = reports[0].rule if reports[0].rule.startswith("launcher.") else EXITED_RULE
        return Verdict(rank=rank, cause=reports[0], rule=rule, decided_by="the launcher's exit report only",
                       reasons=reasons)

    def _from_causes(self, causes: list[Event], units: list[Event]) -> Verdict:
        # A death the launcher reports (exit -6 after a watchdog abort, say) is a consequence on a rank
        # that printed its own symptoms; the launcher line is then not a cause of its own.
        by_rank: dict[int | None, Event] = {}
        for event in causes:
            rank = self.event_rank(event)
            if rank not in by_rank:
                by_rank[rank] = event
        ranked = {r: e for r, e in by_rank.items() if r is not None}
        consensus = self._peer_consensus(causes)
        if consensus is not None:
            return consensus
        explained = self._own_output_of_exit(causes, ranked)
        if explained is not None:
            return explained
        elsewhere = self._not_waiting_when_interrupted(causes, ranked)
        if elsewhere is not None:
            return elsewhere
        if not ranked:
            event = _stated(by_rank[None], causes)
            waited = self._waited_for_unnamed(event)
            if waited is not None:
                return waited
            rank, how = self._rank_from_launcher()
            decided_by = "launcher exit"
            if rank is None:
                rank, how = self._rank_of_traceback_after(event)
                decided_by = "the traceback that follows"
            reasons = [f"the failure was printed without a rank prefix; {how}"] if rank is not None else []
            return Verdict(rank=rank, cause=event, rule=event.rule,
                           decided_by=decided_by if rank is not None else "single process or no rank prefix",
                           reasons=reasons)
        timed = {r: e.line.time for r, e in ranked.items()}
        use_time = len(ranked) > 1 and all(t is not None for t in timed.values())
        order = sorted(ranked, key=lambda r: (timed[r], ranked[r].order) if use_time else (ranked[r].order, 0))
        how = "timestamp" if use_time else "order of appearance"
        table_first = None if use_time else self._table_first(ranked)
        if table_first is not None:
            order.remove(table_first)
            order.insert(0, table_first)
            how = "the launcher's first observed failure"
        first = order[0]
        event = _stated(ranked[first], causes)
        reasons = []
        others = order[1:]
        if others:
            reasons.append(f"its {event.rule} (line {event.line.number}) comes before the causes on rank(s) "
                           f"{ranks_text(others)} ({how})")
        else:
            reasons.append(f"the launcher's report of its exit (line {event.line.number}) is the only failure in the log"
                           if is_launcher_report(event) else
                           f"it is the only rank with a failure of its own ({event.rule}, line {event.line.number})")
        mapped = self._mapping_reason(event)
        if mapped:
            reasons.append(mapped)
        verdict = Verdict(rank=first, cause=event, rule=event.rule, decided_by=f"earliest cause ({how})",
                          reasons=reasons)
        same_rule = [r for r in order if ranked[r].rule == event.rule]
        if len(same_rule) > 1:
            verdict.candidates = [(r, ranked[r].rule, f"also raised {ranked[r].rule}") for r in same_rule[1:]]
        self._launcher_first_exit(verdict, ranked)
        return verdict

    def _waited_for_unnamed(self, event: Event) -> Verdict | None:
        """A rank that reports waiting for others without naming them (a start-up barrier): the ranks that
        printed it arrived; the stalled ones are those that did not, which the log does not name."""
        if not _waits_unnamed(event):
            return None
        waiters = sorted({int(e.fields["waiter"]) for e in self.col.units
                          if e.rule == event.rule and _waits_unnamed(e) and e.fields["waiter"].isdigit()})
        world, joined = event.fields.get("world_size"), event.fields.get("worker_count")
        missing = (f"; {int(world) - int(joined)} of the {world} ranks never arrived" if world and joined
                   and world.isdigit() and joined.isdigit() and int(world) > int(joined) else "")
        return Verdict(rank=None, cause=event, rule=event.rule, decided_by="the ranks that arrived waited",
                       reasons=[f"rank(s) {ranks_text(waiters)} arrived and waited (line {event.line.number}){missing}"],
                       undecided="the log does not say which ranks did not arrive: their own logs (or the "
                                 "launcher's) tell")

    def _table_first(self, ranked: dict[int, Event]) -> int | None:
        """Several children are known only from one agent's failure table (all SIGABRT, say): the table
        lists them in no causal order, but its `Root Cause (first observed failure)` is the exit the agent
        saw first. Only for one agent: agents on different nodes have no common clock."""
        if len(ranked) < 2 or not all(is_launcher_report(e) for e in ranked.values()):
            return None
        roots = [e for e in self.launcher.exits if e.root_cause]
        if len(roots) != 1 or roots[0].local_rank is None:
            return None
        rank = roots[0].rank if roots[0].rank is not None else self.global_rank(roots[0].agent, roots[0].local_rank)
        return rank if rank in ranked else None

    def _own_output_of_exit(self, causes: list[Event], ranked: dict[int, Event]) -> Verdict | None:
        """One rank is known only from its launcher's exit line (`failed (exitcode: -6) local_rank: 1`),
        and before it an unprefixed process printed why it died (`Fatal Python error: ...`): the
        message names the failure, the launcher names the rank."""
        if len(ranked) != 1:
            return None
        rank, exit_event = next(iter(ranked.items()))
        if not is_launcher_report(exit_event):
            return None
        if any(not is_launcher_report(e) for e in causes if self.event_rank(e) == rank):
            return None
        # The process's own output is in its agent's file, behind its node's prefix (pdsh host, srun task):
        # an unprefixed traceback of another node (a restarted attempt failing to connect, say) is another
        # process's.
        own = [e for e in causes if e.line.rank is None and not is_launcher_report(e)
               and self.event_rank(e) is None and e.order < exit_event.order and e.rule != exit_event.rule
               and e.line.source == exit_event.line.source
               and (e.line.host is None or exit_event.line.host is None or e.line.host == exit_event.line.host)]
        if not own:
            return None
        event = own[-1]
        local = exit_event.fields.get("local_rank", "?")
        return Verdict(rank=rank, cause=event, rule=event.rule, decided_by="launcher exit of the process that printed it",
                       reasons=[f"an unprefixed process printed {event.rule} (line {event.line.number}), then the "
                                f"launcher reported local rank {local} (global rank {rank}) dying with code "
                                f"{exit_event.fields.get('exitcode', '?')} (line {exit_event.line.number})"])

    def _peer_consensus(self, causes: list[Event]) -> Verdict | None:
        """Reports that name another rank ("..., but Rank 1 is running collective", a store key of a rank
        that never arrived): when most of them name the same rank, that rank is the one out of step."""
        votes: Counter[int] = Counter()
        sample: dict[int, Event] = {}
        for event in causes:
            peer = event.fields.get("peer")
            if peer is None or not peer.isdigit() or event.line.quoted:
                continue
            votes[int(peer)] += 1
            sample.setdefault(int(peer), event)
        if not votes:
            return None
        (rank, count), *rest = votes.most_common()
        if rest and count <= sum(c for _, c in rest):
            return None
        event = sample[rank]
        voters = sum(votes.values())
        # The rank the others name may have printed why itself (it crashed before they gave up on it).
        own = next((e for e in causes if self.event_rank(e) == rank and e.fields.get("peer") is None
                    and not e.line.quoted), None)
        if own is not None:
            return Verdict(rank=rank, cause=own, rule=own.rule, decided_by="named by the other ranks",
                           reasons=[f"{count} of {voters} report(s) of {event.rule} name rank {rank} (line "
                                    f"{event.line.number}), which printed {own.rule} itself (line {own.line.number})"])
        if not any(e.line.rank is not None or e.fields.get("waiter") for e in sample.values()):
            # No rank printed these: a launcher's or scheduler's line names the rank (srun's `task 0: Out Of
            # Memory`), not the other ranks.
            return Verdict(rank=rank, cause=event, rule=event.rule, decided_by="named by the launcher",
                           reasons=[f"the launcher's line names rank {rank} (line {event.line.number}: "
                                    f"{event.line.text.strip()[:160]})"])
        return Verdict(rank=rank, cause=event, rule=event.rule, decided_by="named by the other ranks",
                       reasons=[f"{count} of {voters} report(s) of {event.rule} name rank {rank} as the one out of step"
                                f" (line {event.line.number}: {event.line.text.strip()[:160]})"])

    def _mapping_reason(self, event: Event) -> str:
        """How a launcher line's local rank became a global rank, in words (empty for prefixed lines)."""
        local = event.fields.get("local_rank")
        if event.line.rank is not None or local is None or not local.isdigit():
            return ""
        agent = self.agent_of_event(event)
        rank, how = self.launcher.global_rank_how(agent, int(local))
        if rank is None:
            same_file = [a for a, files in self.launcher.sources.items() if event.line.source in files]
            if len(same_file) == 1:
                agent = same_file[0]
                rank, how = self.launcher.global_rank_how(agent, int(local))
        if rank is None:
            return ""
        where = f" of {event.line.source}" if event.line.source not in ("-", "") else ""
        return f"local rank {local}{where} is global rank {rank} ({how})"

    def amp_warmup(self, event: Event) -> bool:
        """fp16 AMP's first steps: GradScaler starts at a scale of 65536, so the first iterations
        overflow, log an inf/nan gradient norm and are skipped (the scale halves each time) while the
        loss on the same line stays finite. A few of those, and no non-finite loss, is normal."""
        if event.rule != NAN_RULE or "grad" not in event.fields.get("metric", ""):
            return False
        if self._warmup is None:
            grad_only = [u for u in self.col.units if u.rule == NAN_RULE]
            self._warmup = (0 < len(grad_only) <= AMP_WARMUP_STEPS
                            and all("grad" in u.fields.get("metric", "") and _scaler_overflow_line(u.line.text)
                                    for u in grad_only)
                            and self.col.counts[NAN_RULE].count <= AMP_WARMUP_STEPS)
        return self._warmup

    def _rank_from_launcher(self) -> tuple[int | None, str]:
        """The rank the launchers' accounts point at, fused over every agent (one per node): a child
        that exited with an error code and did not itself suffer a peer's loss (a rank that exits 1
        after `Connection closed by peer` is collateral whatever its agent's table says)."""
        suffering = self.suffering_ranks()
        found: list[tuple[int, str]] = []
        for first in self.launcher.first_failures():
            if first.local_rank is None or first.exitcode is None or first.exitcode <= 0:
                continue
            rank, mapped = self.launcher.global_rank_how(first.agent, first.local_rank)
            if rank is None or rank in suffering:
                continue
            where = f" on {first.agent}" if first.agent and not first.agent.startswith(("pid ", "file ")) else ""
            assumed = " (single node assumed)" if mapped == "single node assumed" else ""
            found.append((rank, f"the launcher{where} saw local rank {first.local_rank} (global rank {rank}{assumed}) "
                                f"exit first with code {first.exitcode}"))
        if len({r for r, _ in found}) == 1:
            return found[0]
        ranks = {e.rank for e in self.launcher.exits if e.exitcode is not None and e.exitcode > 0 and e.rank is not None}
        ranks -= suffering
        if len(ranks) == 1:
            only = ranks.pop()
            return only, f"rank {only} is the only child that exited with an error code"
        return None, ""

    def suffering_ranks(self) -> RankSet:
        """Ranks that printed what they suffered (a lost peer, a timeout)."""
        out = RankSet()
        for u in self.col.units:
            if u.role is Role.SYMPTOM and not u.line.quoted:
                rank = self.event_rank(u)
                if rank is not None:
                    out.add(rank)
        out |= grouped_ranks(self.col, lambda e: True)
        return out

    def _launcher_first_exit(self, verdict: Verdict, ranked: dict[int, Event]) -> None:
        """A child that exited first, printed nothing, while the rank we see failing was still alive."""
        firsts = self.launcher.first_failures()
        if len(firsts) != 1:
            return  # several nodes: each agent saw only its own children exit, in no common order
        first = firsts[0]
        if first.local_rank is None or first.exitcode is None or first.exitcode <= 0:
            return
        rank = self.global_rank(first.agent, first.local_rank)
        if rank is None or rank == verdict.rank or rank in self.col.ranks_seen or rank in ranked:
            return
        if verdict.rank not in self.survivor_ranks():
            return
        verdict.reasons = [
            f"the launcher saw local rank {first.local_rank} (pid {first.pid}) exit first with code {first.exitcode}, "
            f"while rank {verdict.rank} was still alive (it was sent SIGTERM); rank {rank}'s own output is not in "
            f"the log, and rank {verdict.rank}'s {verdict.rule} shows what the ranks were running into"]
        verdict.candidates.insert(0, (verdict.rank if verdict.rank is not None else -1, verdict.rule or "",
                                      "its failure is the one visible in the log"))
        verdict.rank = rank
        verdict.decided_by = "launcher exit order"

    def _from_symptoms(self, symptoms: list[Event]) -> Verdict:
        named = self._named_culprit(symptoms)
        if named is not None:
            return named
        waiting = self._left_waiting(symptoms)
        if waiting is not None:
            return waiting
        busy = [e for e in symptoms if not _idle(e)]  # an idle rank's report is not what it suffered
        suffered: dict[int, Event] = {}
        for event in busy:
            rank = self.event_rank(event)
            if rank is not None and rank not in suffered:
                suffered[rank] = event
        timeouts = {r: e for r, e in suffered.items() if e.rule == TIMEOUT_RULE}
        odd = self._odd_one_out(timeouts) or self._two_collectives(timeouts)
        if odd is not None:
            return odd
        first_symptom = min(busy or symptoms, key=lambda e: e.order)
        world = self._world()
        grouped = grouped_ranks(self.col, lambda e: e.severity is Severity.ERROR and not self.amp_warmup(e)
                                and not _idle(e))
        suffered_ranks = RankSet(suffered)
        suffered_ranks |= grouped
        absent = world - suffered_ranks
        cut = self._cut_off_rank()
        if cut is not None and cut in absent:
            absent = absent - RankSet([cut])
        # A rank the launcher was still to SIGTERM at teardown was alive when the others failed: it neither
        # stalled nor left first (when every absent rank was, the set stays as it is).
        absent = (absent - RankSet(self.survivor_ranks())) or absent
        missing = list(itertools.islice(absent, MAX_CANDIDATES + 1))  # all of them when few; then only tested
        victims = suffered_ranks.text()
        if len(absent) == 1:
            rank = missing[0]
            exited = self._silent_exit(rank, first_symptom, victims)
            if exited is not None:
                return exited
            idle = next((e for e in symptoms if _idle(e) and self.event_rank(e) == rank), None)
            if idle is not None:
                return Verdict(rank=rank, cause=first_symptom, rule=STALLED_RULE, decided_by=self.IDLE,
                               reasons=[f"ranks {victims} report {first_symptom.rule} while rank {rank}'s own "
                                        f"report (line {idle.line.number}) shows every collective it enqueued "
                                        f"completed (#{idle.fields['last_completed']}): it never reached the "
                                        f"collective the others wait in"])
            return Verdict(rank=rank, cause=first_symptom, rule=STALLED_RULE, decided_by="missing from the timeouts",
                           reasons=[f"ranks {victims} report {first_symptom.rule} while rank {rank} reports no timeout and "
                                    f"no error: it never reached the collective the others wait in"])
        behind = self._behind(timeouts, busy)
        if behind is not None:
            return behind
        # Only when some rank did suffer: with no rank named at all (a launcher's or a framework's shutdown
        # message without a rank prefix), rank 0 is no more likely than any other.
        # Rank 0 alive until the launcher's teardown SIGTERMed it (only its watchdog had not fired yet) is no
        # likelier than any rank it SIGTERMed with it.
        in_barrier = any((e.fields.get("numel_in") or e.fields.get("numel")) == "1" for e in busy
                         if e.rule == TIMEOUT_RULE)
        if (timeouts and suffered_ranks and 0 not in suffered_ranks and 0 not in self.survivor_ranks()
                and (0 in missing or _all_but_rank_zero(suffered_ranks, world, in_barrier))):
            candidates = [(r, STALLED_RULE, "did not report the timeout") for r in missing[:MAX_CANDIDATES] if r != 0]
            barrier = " in a 1-element barrier" if in_barrier else ""
            return Verdict(rank=0, cause=first_symptom, rule=STALLED_RULE, decided_by="rank 0 absent from the timeouts",
                           reasons=[f"ranks {victims} timed out{barrier} waiting for a peer while rank 0 shows no "
                                    f"timeout: rank 0 is where serial work (checkpoint save, data preparation, "
                                    f"evaluation) runs while the others wait"],
                           candidates=candidates)
        candidates = [(r, STALLED_RULE, "did not report the timeout") for r in missing[:MAX_CANDIDATES]]
        if not candidates and suffered_ranks and world == suffered_ranks and first_symptom.rule == TIMEOUT_RULE:
            # No rank but those that suffered is in the log: the silent one is among the lower ranks it lacks.
            unseen = [r for r in range(min(suffered_ranks.last() or 0, MAX_CANDIDATES + 1)) if r not in suffered_ranks]
            candidates = [(r, STALLED_RULE, "not in the log: no timeout of its own shown") for r in unseen]
        return Verdict(rank=None, cause=first_symptom, rule=first_symptom.rule, decided_by="undecided",
                       candidates=candidates,
                       undecided=(f"ranks {victims} only suffered" if victims else "the log holds only symptoms")
                                 + f" ({first_symptom.rule}); the log does not show "
                                 f"which rank stopped first" + (f"; candidates: {absent.text()}" if absent else ""))

    LEFT_WAITING = "left waiting by peers that finished"
    STOPPED_AFTER_WARNING = "a warning, then a traceback that stopped the process"
    IDLE = "no collective in flight while the others timed out"
    NOT_WAITING = "the one rank not waiting in torch when interrupted"

    def _left_waiting(self, symptoms: list[Event]) -> Verdict | None:
        """One rank lost its peers' connections, and its node's launcher accounts for every other worker as
        alive until the teardown that rank's own failure started (SIGTERMed by the agent): no worker
        crashed, so the peers that closed the connections had finished and exited cleanly (a worker that
        exits 0 is not in the failure table). The rank left in a collective the others never called was
        out of step with them: an extra or a different collective (uneven batches, rank-dependent code).
        A peer exiting is what a rank suffers; a SIGTERMed rank had not exited, so it is not that peer.
        Only on one node, where the table lists every worker that failed."""
        if any(e.rule != PEER_EXITED_RULE for e in symptoms) or len(self.launcher.agents) != 1:
            return None
        ranks = {self.event_rank(e) for e in symptoms}
        if len(ranks) != 1 or None in ranks:
            return None
        (rank,) = ranks
        assert rank is not None
        survivors = self.survivor_ranks()
        own_exit = False
        for child in self.launcher.exits:
            child_rank = child.rank if child.rank is not None else (
                None if child.local_rank is None else self.global_rank(child.agent, child.local_rank))
            if child_rank == rank:
                own_exit = own_exit or (child.exitcode is not None and child.exitcode > 0)
            elif child.root_cause:
                return None  # the launcher saw another worker fail first
            elif child_rank is None or child_rank not in survivors or child.exitcode != TEARDOWN_EXITCODE:
                return None
        (agent,) = self.launcher.agents
        world, nproc = self.launcher.world_size, self.launcher.nproc.get(agent)
        if not own_exit or not survivors or (world is not None and nproc is not None and world > nproc):
            return None
        event = min(symptoms, key=lambda e: e.order)
        killed = ", ".join(str(r) for r in sorted(survivors))
        return Verdict(rank=rank, cause=event, rule=MISMATCH_RULE, decided_by=self.LEFT_WAITING,
                       reasons=[f"rank {rank} lost its peers' connections (line {event.line.number}) and exited "
                                f"with an error; the launcher SIGTERMed rank(s) {killed} only afterwards and "
                                f"reports no other worker failing: the peers it waited for had finished and "
                                f"exited, so rank {rank} was in a collective they never called"],
                       candidates=[(-1, STALLED_RULE, "a worker of another node, not in this log, exited first")])

    def _not_waiting_when_interrupted(self, causes: list[Event], ranked: dict[int, Event]) -> Verdict | None:
        """A run someone interrupted (Ctrl-C on a hang): each rank's traceback ends where it was. The ranks
        inside torch's communication or autograd were waiting in a collective; the one rank that was
        elsewhere (a data read, a save, a sleep) is the rank they waited for."""
        if not ranked or any(e.rule != INTERRUPTED_RULE for e in causes):
            return None
        where = {r: e.fields.get("innermost", "") for r, e in ranked.items()}
        if not all(where.values()):
            return None
        elsewhere = [r for r, frame in where.items() if not _WAITING_FRAME.search(frame)]
        if len(elsewhere) != 1:
            return None
        rank = elsewhere[0]
        waiting = sorted(r for r in where if r != rank)
        # Ranks that printed what they suffered (a peer gone as the interrupted ones exited) were not stopped
        # elsewhere either.
        suffered = sorted(r for r in self.suffering_ranks() if r != rank and r not in where)
        if not waiting and not suffered:
            return None
        others = (f"rank(s) {', '.join(map(str, waiting))} waited inside torch ({where[waiting[0]]})" if waiting
                  else f"rank(s) {', '.join(map(str, suffered[:8]))} only suffered")
        return Verdict(rank=rank, cause=ranked[rank], rule=INTERRUPTED_RULE, decided_by=self.NOT_WAITING,
                       reasons=[f"when the run was interrupted, rank {rank} was in {where[rank]} while {others}: "
                                f"rank {rank} is where the run hung"])

    def _named_culprit(self, symptoms: list[Event]) -> Verdict | None:
        """Desync reports, flight-recorder analyses and NCCL peers that name the rank others wait for."""
        peers: Counter[int] = Counter()
        sample: dict[int, Event] = {}
        for event in self.col.units:
            peer = event.fields.get("peer")
            if peer is None or not peer.isdigit() or event.role is Role.CONTEXT or event.line.quoted:
                continue
            rank = int(peer)
            if event.fields.get("peer_is_local") or "localRank" in event.line.text:
                mapped = self.global_rank(self.agent_of_event(event), rank)
                if mapped is None and len(self.launcher.agents) > 1:
                    continue  # a local rank of a node the log does not map: no global rank to name
                rank = rank if mapped is None else mapped
            peers[rank] += 1
            sample.setdefault(rank, event)
        if len(peers) == 1:
            rank, _ = peers.most_common(1)[0]
            event = sample[rank]
            rule = STALLED_RULE if event.rule == STALLED_RULE else event.rule
            return Verdict(rank=rank, cause=event, rule=rule if rule != "distributed.peer-exited" else STALLED_RULE,
                           decided_by="named by a peer report",
                           reasons=[f"line {event.line.number} names rank {rank}: {event.line.text.strip()[:160]}"])
        return None

    def _silent_exit(self, rank: int, first_symptom: Event, victims: str) -> Verdict | None:
        """The one rank that suffered nothing left on its own: its launcher reports a plain exit status
        (not a signal) and the rank printed no error. It did not stall; it exited (sys.exit, os._exit,
        an early-stopping branch) or its error went somewhere else (--redirects, --log-dir)."""
        exits = [e for e in self.launcher.exits
                 if e.exitcode is not None and e.exitcode > 0 and e.local_rank is not None
                 and self.global_rank(e.agent, e.local_rank) == rank]
        if not exits:
            return None
        code = exits[0].exitcode
        report = next((u for u in self.col.units if u.role is Role.CONTEXT and self.event_rank(u) == rank), None)
        reasons = [f"ranks {victims} report {first_symptom.rule}, while rank {rank} printed no error and its "
                   f"launcher reports exit status {code} (not a signal): it left the job on its own"]
        mapped = self._mapping_reason(report) if report is not None else ""
        if mapped:
            reasons.append(mapped)
        return Verdict(rank=rank, cause=report or first_symptom, rule=EXITED_RULE, decided_by="exited on its own",
                       reasons=reasons)

    def _odd_one_out(self, timeouts: dict[int, Event]) -> Verdict | None:
        if len(timeouts) < 3:
            return None
        for key in ("optype", "seq"):
            values = {r: e.fields[key] for r, e in timeouts.items() if e.fields.get(key) and not _ends_line(e, key)}
            if len(values) < 3:
                continue
            counts = Counter(values.values())
            if len(counts) < 2:
                continue
            lonely = [r for r, v in values.items() if counts[v] == 1]
            if len(lonely) == 1 and counts.most_common(1)[0][1] >= 2:
                rank = lonely[0]
                event = timeouts[rank]
                majority = counts.most_common(1)[0][0]
                rule = MISMATCH_RULE if key == "optype" else STALLED_RULE
                # The ranks past the first of the majority's line are in its RankGroup (same fields).
                others = {r for r in values if r != rank} | grouped_ranks(
                    self.col, _same_wait(key, majority))
                return Verdict(rank=rank, cause=event, rule=rule, decided_by=f"odd one out ({key})",
                               reasons=[f"rank {rank} waits in {key}={values[rank]} while ranks "
                                        f"{ranks_text(others)} wait in {key}={majority}: "
                                        f"it is on a different code path"])
        return None

    def _cut_off_rank(self) -> int | None:
        """A rank the log shows only in its very last line, cut a few characters past the rank's prefix (a paste
        or an excerpt that ends there): it is seen, but what it did is not, so it is not 'absent from the
        timeouts' either."""
        start = self.col.newest_rank_start
        if start is None or len(self.col.sources) != 1:
            return None
        rank, number, chars = start
        return rank if number == self.col.lines and chars < CUT_LINE_CHARS else None

    def _two_collectives(self, timeouts: dict[int, Event]) -> Verdict | None:
        """Two ranks alone timed out, at the same sequence number in different collectives: they took
        different code paths (with two, which one strayed the log cannot tell; _odd_one_out needs three)."""
        if len(timeouts) != 2:
            return None
        (a, first), (b, second) = sorted(timeouts.items())
        ops = [e.fields.get("optype") for e in (first, second)]
        seqs = [e.fields.get("seq") for e in (first, second)]
        if (None in ops or ops[0] == ops[1] or None in seqs or seqs[0] != seqs[1]
                or any(_ends_line(e, "optype") for e in (first, second))):
            return None
        event = min(first, second, key=lambda e: e.order)
        return Verdict(rank=None, cause=event, rule=MISMATCH_RULE, decided_by="two ranks in different collectives",
                       reasons=[f"at collective #{seqs[0]} rank {a} waits in {ops[0]} while rank {b} waits in "
                                f"{ops[1]}: they took different code paths"],
                       undecided=f"with two ranks the log cannot tell which of {a} and {b} strayed from the "
                                 "collectives the others run",
                       candidates=[(a, MISMATCH_RULE, f"waits in {ops[0]}"), (b, MISMATCH_RULE, f"waits in {ops[1]}")])

    def _behind(self, timeouts: dict[int, Event], reports: list[Event]) -> Verdict | None:
        """The one rank whose last completed collective is behind the others' (each rank's number from the
        first of its reports that gives one: the watchdog's first line may not, the next one does)."""
        completed: dict[int, int] = {}
        groups: set[str] = set()  # sequence numbers count per process group: only one group's compare
        for e in reports:
            r = self.event_rank(e)
            value = e.fields.get("last_completed")
            if (r in timeouts and r not in completed and e.rule == TIMEOUT_RULE and value is not None
                    and value.lstrip("-").isdigit()):
                completed[r] = int(value)
                group = _PG_TAG.search(e.line.text)
                groups.add((group[1] or group[2]) if group else "")
        if len(completed) < 2 or len(set(completed.values())) < 2 or len(groups - {""}) > 1:
            return None
        lowest = min(completed.values())
        behind = [r for r, v in completed.items() if v == lowest]
        if len(behind) != 1:
            return None
        rank = behind[0]
        return Verdict(rank=rank, cause=timeouts[rank], rule=STALLED_RULE, decided_by="behind in sequence numbers",
                       reasons=[f"rank {rank} last completed collective #{lowest}, behind the others "
                                f"({', '.join(f'rank {r}: #{v}' for r, v in sorted(completed.items()) if r != rank)})"])


# The process group a watchdog line speaks of (torch >= 2.4's log prefix): its GUID where printed (ranks of
# different sub-groups can share a PG ID).
_PG_TAG = re.compile(r"\[PG ID (?:\d+ PG GUID (\w+)|(\d+))")


def _idle(event: Event) -> bool:
    """A rank that reports its process group's progress with every collective it enqueued completed (the
    dump request a peer's timeout sends every rank): it waits in no collective, so it suffered nothing;
    it may be the rank that never reached the one the others wait in."""
    enqueued, completed = event.fields.get("last_enqueued"), event.fields.get("last_completed")
    return enqueued is not None and enqueued == completed


def _ends_line(event: Event, key: str) -> bool:
    """Whether the field's value is the last thing on its line: a line cut there (a paste, a truncated
    file) may have cut the value too (`OpType=ALLREDUC`), so it cannot set the rank apart."""
    return event.line.text.rstrip().endswith(event.fields[key])


def _same_wait(key: str, value: str | None) -> Callable[[Event], bool]:
    """Accepts the timeouts that wait in the same `key` (optype, seq) as `value`."""
    return lambda event: event.rule == TIMEOUT_RULE and event.fields.get(key) == value


def _stated(event: Event, causes: list[Event]) -> Event:
    """The line that states a failure rather than the frame before it: a traceback pasted without its header
    is no block, so a frame matched by an entry (`File ".../compile_fx.py", line 1154, in compile_fx`) or the
    source a frame echoes (`raise ValueError("...")`) comes first; the same entry's exception line of the same
    process a few lines later is the evidence (decided as before: only the line shown changes)."""
    if not is_frame_line(event):
        return event
    for later in causes:
        if (later.order > event.order and later.rule == event.rule and later.line.rank == event.line.rank
                and later.line.source == event.line.source and not is_frame_line(later)
                and later.line.number - event.line.number <= STATED_WITHIN):
            return later
    return event


# A person's sentence around an error: a first-person subject and a verb of running into it, a conditional
# "if I", or "my script/model ..."; log records name no one this way.
_NARRATION = re.compile(
    r"\b(?:[Ii]f I|(?:I|[Ww]e)(?:'ve| have| had| am| was| keep| still)?\s+(?:get|gets|got|getting|see|saw|seeing|"
    r"encounter(?:ed)?|receive[d]?|hit|face[d]?|run into|ran into|tried|try))\b|\b[Mm]y (?:code|model|script|"
    r"training|job|run)\b")
_EXCEPTION_WORD = re.compile(r"\b\w*(?:Error|Exception)\b")
# How Python prints the exception that ends a traceback (traceback.format_exception_only): its qualified
# class name, then `: message` unless the message is empty. Classes not named ...Error/...Exception
# (`pyarrow.lib.ArrowInvalid`, `jinja2.exceptions.TemplateNotFound`) have no pattern of their own; a bare
# word ("Killed", a shell's) is not taken for one: it needs a module path or a message.
_LAST_LINE_EXCEPTION = re.compile(
    r"^\s{0,8}(?P<exception>(?:[A-Za-z_]\w{0,80}\.){1,12}_?[A-Z]\w{0,80}|_?[A-Z]\w{0,80}(?=:\s))"
    r"(?::\s(?P<message>\S.{0,1999})|:?\s*$)")


def exception_of_last_line(text: str) -> dict[str, str]:
    """The exception class (and message) a traceback's last line names, as Python prints it; {} when the
    line is no such line (the traceback was cut inside its frames)."""
    found = _LAST_LINE_EXCEPTION.match(text)
    if found is None:
        return {}
    return {name: value for name, value in found.groupdict().items() if value}


def is_narrated(event: Event) -> bool:
    """Whether the event's line is a person's sentence that quotes the error (a paste's narration), not a
    record a process printed: the narration comes before the first exception name on the line."""
    text = event.line.text
    narration = _NARRATION.search(text)
    if narration is None:
        return False
    exception = _EXCEPTION_WORD.search(text)
    return exception is None or narration.start() < exception.start()


def _unexplained(causes: list[Event]) -> list[Event]:
    """The causes without those another cause explains: a DataLoader worker "killed by signal: Killed" whose
    pid the kernel's OOM killer names in the same log died of that kill (the kill is the cause, whichever
    line the paste put first); and, beside a kill for memory of any kind (the kernel's, a container's,
    Slurm's cgroup: each reported when it is noticed, often after what it caused), a generic exception of
    a process that only lost what was killed (a Ray Tune `TuneError`, a `ChildProcessError`); and the abort
    of a process that printed its error first (`_aborted_after_error`)."""
    if any(_is_abort(e) for e in causes):
        causes = [e for e in causes if not _is_abort(e) or not _aborted_after_error(e, causes)] or causes
    if any(e.rule in MEMORY_KILLS for e in causes):
        causes = [e for e in causes if e.rule != GENERIC_RULE] or causes
    if any(e.rule in WRAPPING_RULES for e in causes):
        named = _named_lines(causes)
        causes = [e for e in causes if e.rule not in WRAPPING_RULES or not _wraps_named_error(e, named)]
    if any(e.rule != NCCL_ERROR_RULE and "NCCL WARN" in e.line.text for e in causes):
        # NCCL's error code ("internal error", "unhandled cuda error") is what its own WARN lines explain:
        # a CUDA allocation that failed, an IB completion error (printed with NCCL_DEBUG, wherever the paste
        # put them).
        causes = [e for e in causes if e.rule != NCCL_ERROR_RULE] or causes
    killed = {e.fields["pid"] for e in causes if e.rule in OOM_KILLERS and e.fields.get("pid")}
    if not killed:
        return causes
    return [e for e in causes if e.fields.get("worker_pid") not in killed] or causes


def _aborted_after_error(abort: Event, causes: list[Event]) -> bool:
    """Whether the process that aborted printed an error of its own before: a C++ exception nobody caught
    (`terminate called after throwing an instance of ...`, the error as `  what():  ...`) or a failed check
    ends the process with abort(), so SIGABRT says how it died and that error says why. The abort is the
    process's own word or its shell's (`Aborted (core dumped)`); its process is the abort's rank, or any when
    the log gives it none."""
    if not _says_aborted(abort.fields) or "peer" in abort.fields:
        return False  # a launcher's report of a child's exit -6 (srun's task N): how the log names who died
    rank = abort.line.rank
    return any(not _is_abort(c) and c.order < abort.order and c.line.source == abort.line.source
               and (rank is None or c.line.rank == rank) for c in causes)


def _is_abort(event: Event) -> bool:
    """A process that died of SIGABRT, as the shell, the launcher or a signal handler reports it."""
    fields = event.fields
    return event.rule == SIGNAL_RULE and (_says_aborted(fields) or fields.get("signal") == "SIGABRT"
                                          or fields.get("signo") == "6" or fields.get("exitcode") == "-6")


def _says_aborted(fields: dict[str, str]) -> bool:
    """SIGABRT in the words of the process or its shell: `Aborted`, or its name in the shell's language."""
    return fields.get("signal_name") == "Aborted" or "aborted" in fields


def _waits_unnamed(event: Event) -> bool:
    """A rank's report that it waits for others without naming one (`waiter`, no `peer`): it names no rank."""
    return "waiter" in event.fields and "peer" not in event.fields


def _named_lines(causes: list[Event]) -> dict[tuple[str, int | None], list[tuple[int, int]]]:
    """Per process (source, rank), the (line number, indentation) of the causes an entry names by their
    message: what a generic error's message may go on with (`_wraps_named_error`)."""
    named: dict[tuple[str, int | None], list[tuple[int, int]]] = defaultdict(list)
    for e in causes:
        if e.rule not in WRAPPING_RULES and "frame" not in e.pattern:
            named[(e.line.source, e.line.rank)].append((e.line.number, _indent(e.line.text)))
    return named


def _wraps_named_error(wrapper: Event, named: dict[tuple[str, int | None], list[tuple[int, int]]]) -> bool:
    """Whether a generic error's message goes on, in the next few lines of the same process, with an error
    an entry names: the generic one wraps it (a lazy import's RuntimeError around the loader's `undefined
    symbol`, NCCL's "unhandled system error" around its `Last error:`) and that error is the cause. Not a
    frame of a traceback that follows: indented no deeper than the wrapper (a paste indented as a whole
    indents both), unless the wrapper's own line holds no message (it starts on the next line)."""
    line = wrapper.line
    indent = _indent(line.text)
    # `RuntimeError: ` and nothing else: the message is on the lines below, indented as the code that
    # raised it wrote it (multiprocessing's "An attempt has been made to start a new process ...").
    bare = line.text.rstrip().endswith(":")
    return any(0 < number - line.number <= WRAPPED_WITHIN and (bare or depth <= indent)
               for number, depth in named.get((line.source, line.rank), ()))


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip())


def is_launcher_report(event: Event) -> bool:
    """A launcher's line about a child (its exit code, the signal that killed it), not the child's own output."""
    return event.line.quoted or event.pattern.startswith(LAUNCHER_PATTERN_PREFIXES)


def is_host_level(event: Event) -> bool:
    if event.rule in PROCESS_LEVEL_RULES:
        return False
    return event.rule in HOST_LEVEL_RULES or event.rule.split(".", 1)[0] in HOST_LEVEL_CATEGORIES


def named_host(event: Event) -> str | None:
    """A host the event's text names (`Node failure on gpu-07`, `on node node-b`), not its printer's."""
    for key in HOST_FIELDS:
        value = event.fields.get(key)
        if value:
            return value
    return None


def host_of(event: Event) -> str | None:
    """The machine an event is about: a host its text names (`Node failure on gpu-07`), else the host its
    line prefix or file name tells (the kernel log of that node)."""
    named = named_host(event)
    if named:
        return named
    if event.line.host:
        return event.line.host
    m = NCCL_PREFIX.search(event.line.raw, 0, 160)
    return m["host"] if m else None


def pid_of(event: Event) -> int | None:
    """The process an event names (`pid=4331` in Ray's memory-monitor message, `PID 21183` in mpirun's),
    else the one that printed it (NCCL's `host:pid:tid` prefix, a launcher prefix's pid)."""
    value = event.fields.get("pid")
    if value and value.isdigit():
        return int(value)
    m = NCCL_PREFIX.search(event.line.raw, 0, 160)
    if m:
        return int(m["pid"])
    return event.line.pid


def same_host(a: str, b: str) -> bool:
    """`gpu-07` and `gpu-07.cluster.local` are one machine; IP addresses must match exactly."""
    if a == b:
        return True
    if a.replace(".", "").isdigit() or b.replace(".", "").isdigit():
        return False
    return a.split(".", 1)[0] == b.split(".", 1)[0]


class HostEvidence:
    """Attribution of failures that a machine reports (kernel Xid lines, lost nodes).

    Kernel-log lines have no rank: they attach to their host, and the ranks known to run there (from
    rank prefixes seen with a host prefix, the launcher's per-host tables, srun's `host: task N`) are
    the candidates. Among them the one with a failure of its own, or the one that alone did not report
    a timeout, is the initiator; otherwise the host is named with its ranks as candidates.
    """

    def __init__(self, finder: InitiatorFinder) -> None:
        self.finder = finder
        self.col = finder.col

    def decide(self, causes: list[Event], units: list[Event]) -> Verdict | None:
        evidence = [e for e in causes if is_host_level(e) and host_of(e)]
        if not evidence:
            return None
        event = self._earliest(evidence)
        host = host_of(event) or ""
        on_host = self.ranks_on(host)
        printed_by = self.finder.event_rank(event)
        by_pid = self._rank_of_pid(event, on_host)
        rank: int | None
        if printed_by is not None:
            # A hardware error the rank printed itself ("[rank3]: CUDA error: uncorrectable ECC ..."): that
            # rank is on the faulty device, whatever the others on its host did.
            rank, how = printed_by, f"rank {printed_by} printed it"
        elif by_pid is not None:
            # The message names the process (Ray's memory monitor: "pid=4331"), or NCCL's prefix says which
            # process printed it: the pid that the launcher's table or the workers' prefixes give a rank.
            rank, how = by_pid
        else:
            rank, how = self._rank_on_host(on_host, causes, units)
        others = [r for r in on_host if r != rank]
        where = f" (line {event.line.number} of {event.line.source})" if event.line.source != "-" else \
            f" (line {event.line.number})"
        reasons = [f"host {host} reported {event.rule}{where}: {event.line.text.strip()[:160]}"]
        if on_host:
            reasons.append(f"ranks on {host}: {ranks_text(on_host)}" + (f"; {how}" if how else ""))
        later = sorted({r for e in causes if e is not event and (r := self.finder.event_rank(e)) is not None
                        and r not in on_host})
        if later:
            reasons.append(f"failures of rank(s) {ranks_text(later)} on other hosts are consequences of the "
                           f"host-level fault")
        verdict = Verdict(rank=rank, cause=event, rule=event.rule, decided_by="host-level evidence",
                          reasons=reasons, host=host,
                          candidates=[(r, event.rule, f"runs on {host}") for r in others])
        if rank is None and len(on_host) > 1:
            verdict.undecided = (f"host {host} reported {event.rule}; the ranks on it ({ranks_text(on_host)}) are "
                                 f"the candidates")
        return verdict

    @staticmethod
    def _earliest(events: list[Event]) -> Event:
        errors = [e for e in events if e.severity is Severity.ERROR] or events
        if len(errors) > 1 and all(e.line.time is not None for e in errors):
            return min(errors, key=lambda e: (e.line.time, e.order))
        return min(errors, key=lambda e: e.order)

    def _rank_of_pid(self, event: Event, on_host: list[int]) -> tuple[int, str] | None:
        pid = pid_of(event)
        if pid is None:
            return None
        rank = self.col.pid_ranks.get(pid)
        how = "its lines' prefixes"
        if rank is None:
            launcher = self.finder.launcher
            found = {r for r in (c.rank if c.rank is not None else launcher.global_rank(c.agent, c.local_rank)
                                 if c.local_rank is not None else None for c in launcher.exits if c.pid == pid)
                     if r is not None}
            if len(found) != 1:
                return None
            rank, how = found.pop(), "the launcher's table"
        if on_host and rank not in on_host:
            return None  # a pid of another machine (pids repeat across hosts)
        return rank, f"pid {pid} is rank {rank} ({how})"

    def ranks_on(self, host: str) -> list[int]:
        ranks = set(self.col.hosts.ranks_where(lambda h: bool(h) and same_host(h, host)))
        launcher = self.finder.launcher
        for child in launcher.exits:
            where = child.host or child.agent
            if child.rank is not None and where and same_host(where, host):
                ranks.add(child.rank)
        return sorted(ranks)

    def _rank_on_host(self, on_host: list[int], causes: list[Event], units: list[Event]) -> tuple[int | None, str]:
        if len(on_host) == 1:
            return on_host[0], f"rank {on_host[0]} is the only rank on it"
        if not on_host:
            return None, ""
        own = [e for e in causes if not is_host_level(e) and self.finder.event_rank(e) in on_host]
        if own:
            first = min(own, key=lambda e: e.order)
            rank = self.finder.event_rank(first)
            return rank, f"rank {rank} is the first of them with a failure of its own ({first.rule}, line {first.line.number})"
        exited = self._exited_on_its_own(on_host)
        if exited is not None:
            return exited
        suffered = RankSet(r for u in units if u.role is Role.SYMPTOM and (r := self.finder.event_rank(u)) is not None)
        suffered |= grouped_ranks(self.finder.col, lambda e: True)
        silent = [r for r in on_host if r not in suffered]
        if len(silent) == 1 and len(on_host) > 1:
            return silent[0], f"rank {silent[0]} is the one on it that reported no timeout (it was stuck on the faulty device)"
        return None, ""


    def _exited_on_its_own(self, on_host: list[int]) -> tuple[int, str] | None:
        """The rank on the faulty host that the host's own launcher saw exit first with an error code.

        A process on a device that fails raises (an unprefixed `CUDA error: uncorrectable ECC error`
        traceback, say) and exits on its own; its agent then stops the node's other children with
        SIGTERM. So the agents' first observed failures on this host name the rank the hardware error
        reached first; only one such rank decides (two would be two exits the agents did not order)."""
        launcher = self.finder.launcher
        suffering = self.finder.suffering_ranks()
        found: dict[int, str] = {}
        for first in launcher.first_failures():
            where = first.host or first.agent
            if not where or first.local_rank is None or first.exitcode is None or first.exitcode <= 0:
                continue
            rank = launcher.global_rank(first.agent, first.local_rank)
            if rank is None or rank not in on_host or rank in suffering:
                continue
            found[rank] = (f"its launcher saw rank {rank} (local rank {first.local_rank}, pid {first.pid}) exit first "
                           f"with code {first.exitcode}, and stopped the others there")
        if len(found) != 1:
            return None
        return next(iter(found.items()))


@dataclass
class CollateralRanks:
    """For every rank but the initiating one, the first thing it suffered (or raised): ranks one by one where
    their own lines decided, and whole RankSets for the ranks of a RankGroup (a cascade of a million ranks
    stays a few bitmaps). A rank is in exactly one of them."""

    by_rank: dict[int, Event] = field(default_factory=dict)  # in the order the units were met
    groups: list[tuple[RankSet, Event]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.by_rank) + sum(len(ranks) for ranks, _ in self.groups)

    def __bool__(self) -> bool:
        return bool(self.by_rank) or any(ranks for ranks, _ in self.groups)

    def ranks(self) -> RankSet:
        out = RankSet(self.by_rank)
        for ranks, _ in self.groups:
            out |= ranks
        return out

    def lowest(self, count: int) -> list[tuple[int, Event]]:
        """The `count` lowest ranks with what they suffered, lowest first."""
        streams: list[Iterable[tuple[int, Event]]] = [sorted(self.by_rank.items())]
        streams += [zip(ranks, itertools.repeat(event)) for ranks, event in self.groups]
        return list(itertools.islice(heapq.merge(*streams, key=lambda item: item[0]), count))

    def events(self) -> Iterator[Event]:
        """What was suffered, one event a rank for the ranks met one by one, then one a group, then the
        launcher's word for the ranks that printed nothing of their own (lazily: the report reads the
        first few of what may be a million)."""
        # In the order the log showed them: a rank's place in by_rank is where its first event was.
        own = sorted((e for e in self.by_rank.values() if e.role is not Role.CONTEXT), key=lambda e: e.order)
        launcher = (e for e in self.by_rank.values() if e.role is Role.CONTEXT)
        return itertools.chain(own, (event for _, event in self.groups), launcher)

    @functools.cached_property
    def by_rule(self) -> dict[str, tuple[RankSet, Event]]:
        """The ranks that suffered each entry, with the first event of it, in the order of those events,
        the launcher's word for ranks that printed nothing last (worked out once: the report's ranges and
        its reasons both read it)."""
        out: dict[str, tuple[RankSet, Event]] = {}
        entries: list[tuple[Event, Iterable[int]]] = [(event, (rank,)) for rank, event in self.by_rank.items()]
        entries += [(event, ranks) for ranks, event in self.groups]
        for event, ranks in sorted(entries, key=lambda pair: (pair[0].role is Role.CONTEXT, pair[0].order)):
            held = out.get(event.rule)
            if held is None:
                out[event.rule] = (RankSet(ranks), event)
            else:
                held[0].update(ranks)
        return out


def collateral_by_rank(collected: Collected, verdict: Verdict, finder: InitiatorFinder) -> CollateralRanks:
    """For every other rank, the first thing it suffered (or raised)."""
    def preference(event: Event) -> tuple[int, int, int]:
        # What a rank suffered says more than its warnings; its own lines more than a launcher's echo; a
        # launcher's account of a child least.
        role = (-1 if event.role is Role.CONTEXT else 2 if event.role is Role.SYMPTOM
                else 1 if event.severity is Severity.ERROR else 0)
        return role, 0 if event.line.quoted else 1, -event.order

    out = CollateralRanks()
    by_rank = out.by_rank
    # A worker the launcher SIGTERMed at teardown was still alive when another failed: collateral even when
    # it printed nothing of its own (the launcher's table is then all the log holds of it).
    torn_down = finder.survivor_ranks() if verdict.rank is not None else set()
    for event in collected.units:
        rank = finder.event_rank(event)
        if rank is None or rank == verdict.rank or (event.role is Role.CONTEXT and rank not in torn_down):
            continue
        if event.role is Role.CAUSE and event.severity is not Severity.ERROR:
            continue
        current = by_rank.get(rank)
        if current is None or preference(event) > preference(current):
            by_rank[rank] = event
    claimed = RankSet()  # the ranks of the groups so far
    for group in collected.groups:
        event = group.event
        mine = RankSet(group.ranks)
        if verdict.rank is not None:
            mine.discard(verdict.rank)
        for rank in [r for r in by_rank if r in mine]:  # units are few: this loop is short
            if preference(event) > preference(by_rank[rank]):
                del by_rank[rank]
            else:
                mine.discard(rank)
        if claimed and (mine & claimed):  # a rank in two groups: the preferred event keeps it (the first on a tie)
            for held, other in out.groups:
                overlap = held & mine
                if not overlap:
                    continue
                if preference(event) > preference(other):
                    held -= overlap
                else:
                    mine -= overlap
        if mine:
            claimed |= mine
            out.groups.append((mine, event))
    return out


def _all_but_rank_zero(suffered: RankSet, world: RankSet, in_barrier: bool) -> bool:
    """With no rank 0 anywhere in the log, rank 0 is taken for the one missing when the ranks that suffered
    are every rank but 0 (1 to their highest, no gap), or one rank alone waiting in a barrier (a 1-element
    collective: what the other ranks run while rank 0 saves a checkpoint or prepares data, the serial work
    that keeps it away). One rank alone waiting in a collective of real data is a fragment of the ranks'
    output (one rank's file, one rank a person pasted), where rank 0 is no likelier than the others not
    shown; so are several ranks with gaps between them."""
    if world and world != suffered:
        return False
    last = suffered.last()
    one_in_a_barrier = len(suffered) == 1 and in_barrier
    return last is not None and (one_in_a_barrier or (suffered.first() == 1 and len(suffered) == last))
