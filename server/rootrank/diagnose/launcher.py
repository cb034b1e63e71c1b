"""What the launchers say about their children: torchrun/torchelastic, DeepSpeed, srun, mpirun.

Launcher output is structural evidence, not a failure of its own: which child exited first and how,
which processes were still alive when the launcher sent SIGTERM, and the elastic error table (whose
"Root Cause (first observed failure)" is only the first exit the agent noticed, to the second).
Lines inside the elastic table are echoes of other processes, so they are marked `quoted`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from rootrank.diagnose.formats.timestamps import parse_time
from rootrank.ranks import RankSet

TEARDOWN_EXITCODE = -15  # a child its agent SIGTERMed while tearing the group down (signal 15, negated)
MAX_AGENTS = 4096  # launchers whose files and prefix ranks are kept (a 4,096-node job; see LauncherParser.feed)
_SIGTERM = re.compile(r"Sending process (?P<pid>\d+) closing signal (?P<signal>SIG[A-Z]+)")
_FIRST_FAILED = re.compile(
    r"failed \(exitcode: (?P<exitcode>-?\d+)\) local_rank: (?P<local_rank>\d+) \(pid: (?P<pid>\d+)\)")
_SIGNAL_RECEIVED = re.compile(r"Signal (?P<num>\d+) \((?P<signal>SIG[A-Z]+)\) received by PID (?P<pid>\d+)")
_DS_RETURN = re.compile(r"exits with return code = (?P<exitcode>-?\d+)")
# Slurm lists the tasks as ranges and single tasks, comma-separated (`tasks 1,3:`, `tasks 0-2,5:`).
_SRUN = re.compile(r"srun: error: (?P<host>[\w.-]+): tasks? (?P<tasks>\d+(?:-\d+)?(?:,\d+(?:-\d+)?){0,64}): (?P<what>.+)$")
MAX_SRUN_RANGE = 4096  # tasks of one srun range line recorded one by one
# What srun says a task died of (strsignal's words), and the signal.
_SRUN_SIGNALS = (("Killed", "SIGKILL"), ("Segmentation", "SIGSEGV"), ("Terminated", "SIGTERM"), ("Aborted", "SIGABRT"),
                 ("Bus error", "SIGBUS"), ("Floating point", "SIGFPE"), ("Illegal instruction", "SIGILL"))
_SRUN_EXIT = re.compile(r"Exited with exit code (?P<exitcode>\d+)")
_MPI_PROCESS = re.compile(r"Process name: \[\[\d+,\d+\],(?P<rank>\d+)\]")
_MPI_EXIT = re.compile(r"^\s*Exit code:\s+(?P<exitcode>-?\d+)")
_TABLE_RULE = re.compile(r"^\s*={20,}\s*$")
_ENTRY = re.compile(r"^\s*\[(?P<index>\d+)\]:\s*$")
_FIELD = re.compile(r"^\s*(?P<key>time|host|rank|exitcode|error_file|traceback)\s*:\s?(?P<value>.*)$")
# A number starts only where no digit precedes it, and is bounded: a long run of digits costs one pass.
_RANK_VALUE = re.compile(r"(?<!\d)(?P<rank>\d{1,9}) \(local_rank: (?P<local_rank>\d{1,9})\)")
_EXIT_VALUE = re.compile(r"(?<![\d-])(?P<exitcode>-?\d{1,9}) \(pid: (?P<pid>\d{1,10})\)")
# One entry of the failure table with its fields on one line, as log collectors that join a message's lines
# print it (CloudWatch/SageMaker: "[2]: time : 2024-08-23_22:22:58 host : algo-2 rank : 2 (local_rank: 2)
# exitcode : -6 (pid: 189) error_file: <N/A> traceback : Signal 6 (SIGABRT) received by PID 189").
_FLAT_ENTRY = re.compile(r"(?:\[\d{1,6}\]:\s{0,8})?time\s{0,8}:\s{0,8}\S{1,40}\s{1,8}host\s{0,8}:\s{0,8}(?P<host>\S{0,255})\s{1,8}"
                         r"rank\s{0,8}:\s{0,8}(?P<rank>\d{1,9}) \(local_rank: (?P<local_rank>\d{1,9})\)\s{1,8}"
                         r"exitcode\s{0,8}:\s{0,8}(?P<exitcode>-?\d{1,9}) \(pid: (?P<pid>\d{1,10})\)")
_WORLD = re.compile(r"\b(?:world[ _]size|WORLD_SIZE|nranks)[ \t]{0,8}[:=]?[ \t]{0,8}(?P<n>\d{1,6})\b", re.IGNORECASE)
_MEMBER = re.compile(r"MEMBER: \d+/(?P<n>\d{1,6})")

_ROOT_CAUSE = "Root Cause (first observed failure):"
# torch 1.9-1.10 printed the table with these headings (and the child's error as the error file's JSON, `msg:`).
_OLD_ROOT_CAUSE = "Root Cause:"
_ROOT_CAUSES = (_ROOT_CAUSE, _OLD_ROOT_CAUSE)
_OTHER_FAILURES = "Other Failures:"  # torch 1.9-1.10: after the root cause, below a rule of '='
_HEADINGS = (*_ROOT_CAUSES, _OTHER_FAILURES)  # a table section starts at one of these, wherever it is
_TABLE_HEADINGS = ("Failures:", _OTHER_FAILURES, _ROOT_CAUSE, _OLD_ROOT_CAUSE, "<NO_OTHER_FAILURES>")
ARMING_SIGNS = ("ChildFailedError", _ROOT_CAUSE)  # lines after which the error table may follow


def _is_table_line(text: str) -> bool:
    """A line the elastic error table is made of: rules, headings, `[i]:`, indented fields and tracebacks."""
    stripped = text.rstrip()
    return (not stripped or stripped[0].isspace() or stripped.startswith(_TABLE_HEADINGS)
            or _ENTRY.match(stripped) is not None or stripped.endswith(" FAILED")
            or (len(stripped) >= 20 and stripped.strip("=-") == ""))


ARM_WINDOW = 50  # lines between "ChildFailedError" and the table's opening rule
# What `LauncherParser.feed` and `_agent_line` look for outside a table: a line holding none of these,
# nor a table rule, nor the "Root Cause" heading, changes nothing but the per-agent bookkeeping.
_AGENT_SIGNS = ("ChildFailedError", "closing signal", "failed (exitcode", "local_rank:", "srun: error:",
                "Process name: [[", "Exit code:", "_ranks=[", "group_rank=", "global_world_sizes=", "--node",
                "--nproc", "orld", "nranks", "MEMBER:")


def is_quiet(text: str) -> bool:
    """Whether `LauncherParser.feed` outside a table reads nothing in this line (none of its digit-free
    signs: the same for every line of one message shape, so the pipeline asks once per shape)."""
    return (not any(sign in text for sign in _AGENT_SIGNS) and not _TABLE_RULE.match(text)
            and text.strip() not in _HEADINGS)

_RDZV_LIST = re.compile(r"^\s*(?P<key>local_ranks|global_ranks)=\[(?P<values>[\d, ]{1,4000})\]")
_RDZV_GROUP = re.compile(r"^\s*group_rank=(?P<n>\d{1,6})\s*$")
_RDZV_WORLD = re.compile(r"^\s*global_world_sizes=\[(?P<n>\d{1,6})")
# A torchrun command line as people paste it: `--node-rank 1` / `--node_rank=1`, `--nproc-per-node 4`.
_CMD_NODE_RANK = re.compile(r"--node[-_]rank[= ](?P<n>\d{1,5})\b")
_CMD_NPROC = re.compile(r"--nproc[-_]per[-_]node[= ](?P<n>\d{1,5})\b")


def agent_of(host: str | None, pid: int | None, source: str | None = None) -> str | None:
    """Which launcher printed a line: its host (pdsh prefix or file name), else the pid in its glog
    header, else the file it is in (one torchrun agent per node, one terminal per agent)."""
    if host:
        return host
    if pid is not None:
        return f"pid {pid}"
    return f"file {source}" if source is not None else None


SIGNALS = {1: "SIGHUP", 2: "SIGINT", 6: "SIGABRT", 7: "SIGBUS", 8: "SIGFPE", 9: "SIGKILL", 11: "SIGSEGV",
           13: "SIGPIPE", 15: "SIGTERM"}


@dataclass
class ChildExit:
    """One child's exit as a launcher reported it."""

    line: int
    source: str
    rank: int | None = None
    local_rank: int | None = None
    exitcode: int | None = None
    pid: int | None = None
    time: float | None = None
    host: str | None = None
    signal: str | None = None
    root_cause: bool = False  # listed under "Root Cause (first observed failure)"
    first_observed: bool = False  # the "failed (exitcode: ...)" line of the agent
    agent: str | None = None  # which launcher (one per node) reported it: its host, or its pid

    @property
    def killed_by(self) -> str | None:
        if self.signal:
            return self.signal
        if self.exitcode is not None and self.exitcode < 0:
            return SIGNALS.get(-self.exitcode, f"signal {-self.exitcode}")
        return None


@dataclass
class LauncherReport:
    """What the launchers said. Local ranks are only meaningful per agent (one torchrun agent per node),
    so every mapping is keyed by (agent, local rank)."""

    exits: list[ChildExit] = field(default_factory=list)
    sigterm_pids: list[tuple[str | None, int]] = field(default_factory=list)  # (agent, pid)
    world_size: int | None = None
    # What an agent said about its own node: rendezvous result (local_ranks=/global_ranks=), its
    # group_rank and --nproc-per-node where printed; the global ranks its workers' prefixes showed.
    assigned: dict[str | None, dict[int, int]] = field(default_factory=dict)
    node_rank: dict[str | None, int] = field(default_factory=dict)
    nproc: dict[str | None, int] = field(default_factory=dict)
    prefix_ranks: dict[str | None, RankSet] = field(default_factory=dict)
    sources: dict[str | None, set[str]] = field(default_factory=dict)  # agent -> files it printed in

    @property
    def agents(self) -> set[str | None]:
        return {e.agent for e in self.exits} | {a for a, _ in self.sigterm_pids}

    def pid_to_local_rank(self, agent: str | None) -> dict[int, int]:
        """Map an agent's pids to local ranks: known pairs, extended by torchelastic's consecutive pids."""
        known = {e.pid: e.local_rank for e in self.exits
                 if e.agent == agent and e.pid is not None and e.local_rank is not None}
        mapping = dict(known)
        offsets = {pid - lr for pid, lr in known.items()}
        if len(offsets) == 1:
            offset = offsets.pop()
            for who, pid in self.sigterm_pids:
                if who == agent and 0 <= pid - offset < 4096:
                    mapping.setdefault(pid, pid - offset)
        return mapping

    def first_failure(self) -> ChildExit | None:
        observed = [e for e in self.exits if e.first_observed]
        return observed[0] if observed else None

    def survivors(self) -> set[tuple[str | None, int]]:
        """(agent, local rank) of the children still alive when their agent began tearing the group down."""
        out: set[tuple[str | None, int]] = set()
        for agent in self.agents:
            mapping = self.pid_to_local_rank(agent)
            out |= {(agent, mapping[p]) for who, p in self.sigterm_pids if who == agent and p in mapping}
        return out

    def global_rank(self, agent: str | None, local_rank: int) -> int | None:
        """The global rank of an agent's local rank, from what the agent's own output says: its error
        table's `rank : 6 (local_rank: 2)` pairs (the node's first rank follows from any one pair),
        its rendezvous result, its group rank with --nproc-per-node, or its workers' `[rankN]`
        prefixes; on a single node the local rank is the global rank."""
        rank, _ = self.global_rank_how(agent, local_rank)
        return rank

    def global_rank_how(self, agent: str | None, local_rank: int) -> tuple[int | None, str]:
        """The global rank and how it was found (for the reader: "from node 1's failure table")."""
        for e in self.exits:
            if e.agent == agent and e.local_rank == local_rank and e.rank is not None:
                return e.rank, "failure table"
        assigned = self.assigned.get(agent, {})
        if local_rank in assigned:
            return assigned[local_rank], "rendezvous result"
        base = self.node_base(agent)
        if base is not None:
            return base[0] + local_rank, base[1]
        if len(self.agents) <= 1:
            return local_rank, "single node assumed"
        return None, ""

    def node_base(self, agent: str | None) -> tuple[int, str] | None:
        """The global rank of an agent's local rank 0, and which evidence gave it."""
        bases = {e.rank - e.local_rank for e in self.exits
                 if e.agent == agent and e.rank is not None and e.local_rank is not None}
        if len(bases) == 1:
            return bases.pop(), "failure table"
        assigned = self.assigned.get(agent, {})
        bases = {g - lr for lr, g in assigned.items()}
        if len(bases) == 1:
            return bases.pop(), "rendezvous result"
        for key in (agent, *(f"file {s}" for s in sorted(self.sources.get(agent, ())))):
            if key in self.node_rank and key in self.nproc:
                return self.node_rank[key] * self.nproc[key], "--node-rank x --nproc-per-node"
        # torchrun gives a node contiguous global ranks: the [rankN] prefixes in the agent's own
        # file cover them when they span at least every local rank the agent reported.
        ranks = self.prefix_ranks.get(agent) or RankSet()
        locals_ = self.local_ranks(agent)
        low, high = ranks.first(), ranks.last()
        if low is not None and high is not None and locals_ and high - low + 1 == len(ranks) \
                and len(ranks) >= max(locals_) + 1 and not self._shared_sources(agent):
            return low, "its workers' [rankN] prefixes"
        return None

    def local_ranks(self, agent: str | None) -> set[int]:
        out = {e.local_rank for e in self.exits if e.agent == agent and e.local_rank is not None}
        out |= {lr for who, lr in self.survivors() if who == agent}
        return out

    def _shared_sources(self, agent: str | None) -> bool:
        """Whether another agent printed in the same files (then the files' prefixes are not its own)."""
        mine = self.sources.get(agent, set())
        return any(a != agent and mine & s for a, s in self.sources.items())

    def first_failures(self) -> list[ChildExit]:
        """Each agent's first observed failure (one per node), in the order they were printed."""
        out: dict[str | None, ChildExit] = {}
        for e in self.exits:
            if e.first_observed and e.agent not in out:
                out[e.agent] = e
        return list(out.values())

    def all_ranks(self) -> set[int]:
        ranks = {e.rank for e in self.exits if e.rank is not None}
        ranks |= {g for mapping in self.assigned.values() for g in mapping.values()}
        if not ranks and len(self.agents) <= 1:
            ranks = {e.local_rank for e in self.exits if e.local_rank is not None}
            ranks |= {lr for _, lr in self.survivors()}
        return ranks


class LauncherParser:
    """Fed every line in order; returns for each whether it is quoted and which rank the table entry names."""

    def __init__(self) -> None:
        self.report = LauncherReport()
        self._armed = False
        self._armed_at = 0
        self._in_table = False
        self._root_section = False
        self._entry: ChildExit | None = None
        self._mpi_pending: ChildExit | None = None
        self._agent: str | None = None
        self._source: str | None = None
        self._rdzv_locals: list[int] | None = None
        self._flat_root = False  # a "Root Cause" heading was followed by entries on one line each

    @property
    def wants_every_line(self) -> bool:
        """Inside an error table every line matters (its fields carry no searchable literal)."""
        return self._in_table or self._armed

    def feed(self, text: str, line: int, source: str, agent: str | None = None,
             rank: int | None = None, quiet: bool = False) -> tuple[bool, int | None]:
        """`agent` names the launcher that printed the line when its prefix tells (host, or glog pid);
        `rank` is the global rank a worker's own prefix gave the line; `quiet`: `is_quiet(text)`."""
        if source != self._source:
            # One file per agent is the common multi-node shape: a new file starts a new account.
            self._source = source
            self._agent = agent_of(None, None, source)
            self._in_table = self._armed = self._root_section = False
            self._entry = None
        if agent is not None and not self._in_table:
            self._agent = agent
        report = self.report
        sources = report.sources.get(self._agent)
        if sources is None and len(report.sources) < MAX_AGENTS:
            sources = report.sources[self._agent] = set()
        if sources is not None:  # past MAX_AGENTS "agents" they are workers' own hosts (Ray's ip=), not launchers
            sources.add(source)
            if rank is not None:
                ranks = report.prefix_ranks.get(self._agent)
                if ranks is None:
                    ranks = report.prefix_ranks[self._agent] = RankSet()
                if rank not in ranks.small:  # every worker line comes here: the common case at C speed
                    ranks.add(rank)
        if self._in_table:
            return self._table_line(text, line, source)
        if self._armed and line - self._armed_at > ARM_WINDOW:
            self._armed = False
        if quiet:
            return False, None
        if "ChildFailedError" in text:
            self._armed, self._armed_at = True, line
        if _TABLE_RULE.match(text) and self._armed:
            self._in_table, self._armed, self._root_section = True, False, False
            return True, None
        if text.strip() in _HEADINGS:  # the launcher's own line, not a message that quotes it
            self._in_table, self._root_section = True, text.strip() != _OTHER_FAILURES
            return True, None
        flat_rank = self._agent_line(text, line, source)
        if flat_rank is not None:
            return True, flat_rank  # a table entry joined onto one line: read like the table's own lines
        return False, None

    def _agent_line(self, text: str, line: int, source: str) -> int | None:
        """Record what an agent line says; the global rank of a failure-table entry joined onto one line."""
        report = self.report
        if "closing signal" in text:
            m = _SIGTERM.search(text)
            if m:
                report.sigterm_pids.append((self._agent, int(m["pid"])))
                return None
        if "failed (exitcode" in text:
            m = _FIRST_FAILED.search(text)
            if m:
                report.exits.append(ChildExit(line, source, local_rank=int(m["local_rank"]),
                                              exitcode=int(m["exitcode"]), pid=int(m["pid"]), first_observed=True,
                                              agent=self._agent))
                return None
        if "local_rank:" in text and "exitcode" in text:
            f = _FLAT_ENTRY.search(text)
            if f:
                root = self._flat_root or _ROOT_CAUSE in text[:f.start()]
                self._flat_root = False
                s = _SIGNAL_RECEIVED.search(text, f.end())
                report.exits.append(ChildExit(line, source, rank=int(f["rank"]), local_rank=int(f["local_rank"]),
                                              exitcode=int(f["exitcode"]), pid=int(f["pid"]), host=f["host"] or None,
                                              signal=s["signal"] if s else None, root_cause=root, agent=self._agent))
                return int(f["rank"])
        if "srun: error:" in text:
            m = _SRUN.search(text)
            if m:
                what = m["what"]
                exit_m = _SRUN_EXIT.search(what)
                signal = next((name for word, name in _SRUN_SIGNALS if word in what), None)
                # `tasks 2-3: Exited with exit code 1`: each task of the range exited so, none of them first.
                recorded = 0
                for piece in m["tasks"].split(","):
                    first, _, last = piece.partition("-")
                    for rank in range(int(first), max(int(first), int(last or first)) + 1):
                        if recorded >= MAX_SRUN_RANGE:
                            break
                        recorded += 1
                        report.exits.append(ChildExit(line, source, rank=rank, host=m["host"], signal=signal,
                                                      exitcode=int(exit_m["exitcode"]) if exit_m else None))
                return None
        if "Process name: [[" in text:
            m = _MPI_PROCESS.search(text)
            if m:
                self._mpi_pending = ChildExit(line, source, rank=int(m["rank"]), first_observed=True)
                report.exits.append(self._mpi_pending)
                return None
        if self._mpi_pending is not None and "Exit code:" in text:
            m = _MPI_EXIT.search(text)
            if m:
                self._mpi_pending.exitcode = int(m["exitcode"])
                self._mpi_pending = None
                return None
        if "_ranks=[" in text or "group_rank=" in text or "global_world_sizes=" in text:
            self._rendezvous_line(text)
            return None
        if "--node" in text or "--nproc" in text:
            self._command_line(text)
        if report.world_size is None and ("orld" in text or "nranks" in text or "MEMBER:" in text):
            m = _WORLD.search(text) or _MEMBER.search(text)
            if m and 1 < int(m["n"]) <= 100_000:
                report.world_size = int(m["n"])
        return None

    def _rendezvous_line(self, text: str) -> None:
        """torchrun's rendezvous result (logged at INFO): `local_ranks=[0, 1]` then `global_ranks=[2, 3]`."""
        report = self.report
        m = _RDZV_LIST.match(text)
        if m:
            values = [int(v) for v in m["values"].replace(" ", "").split(",") if v]
            if m["key"] == "local_ranks":
                self._rdzv_locals = values
            elif self._rdzv_locals is not None and len(values) == len(self._rdzv_locals):
                mapping = report.assigned.setdefault(self._agent, {})
                mapping.update(zip(self._rdzv_locals, values, strict=True))
                self._rdzv_locals = None
            return
        g = _RDZV_GROUP.match(text)
        if g:
            report.node_rank[self._agent] = int(g["n"])
            return
        w = _RDZV_WORLD.match(text)
        if w and report.world_size is None and int(w["n"]) > 1:
            report.world_size = int(w["n"])

    def _command_line(self, text: str) -> None:
        """A pasted torchrun command line tells the node's first rank: node rank x processes per node."""
        node = _CMD_NODE_RANK.search(text)
        nproc = _CMD_NPROC.search(text)
        if node and nproc:
            # Keyed by the file: the command is typed before the agent that runs it prints anything.
            key = agent_of(None, None, self._source)
            self.report.node_rank.setdefault(key, int(node["n"]))
            self.report.nproc.setdefault(key, int(nproc["n"]))

    def _table_line(self, text: str, line: int, source: str) -> tuple[bool, int | None]:
        if not _is_table_line(text):
            # The table is printed in one piece: a line of another shape means it ended (or never was one).
            # A heading with no multi-line entry after it may head entries joined onto one line each.
            self._flat_root = self._root_section and self._entry is None
            self._in_table, self._entry, self._root_section = False, None, False
            return self.feed(text, line, source)
        if _TABLE_RULE.match(text):
            # The table opens and closes with a rule of '='; the rule inside after the title is '-'.
            if self._entry is not None or self._root_section:
                self._in_table, self._entry, self._root_section = False, None, False
            return True, None
        if "Root Cause (first observed failure)" in text or text.strip() == _OLD_ROOT_CAUSE:
            self._root_section, self._entry = True, None
            return True, None
        if text.strip() == _OTHER_FAILURES:
            self._root_section, self._entry = False, None
            return True, None
        m = _ENTRY.match(text)
        if m:
            self._entry = ChildExit(line, source, root_cause=self._root_section, agent=self._agent)
            self.report.exits.append(self._entry)
            return True, None
        entry = self._entry
        if entry is not None:
            f = _FIELD.match(text)
            if f:
                key, value = f["key"], f["value"].strip()
                if key == "time":
                    entry.time = parse_time(value.replace("_", "T"))
                elif key == "host":
                    entry.host = value or None
                elif key == "rank":
                    r = _RANK_VALUE.search(value)
                    if r:
                        entry.rank, entry.local_rank = int(r["rank"]), int(r["local_rank"])
                elif key == "exitcode":
                    e = _EXIT_VALUE.search(value)
                    if e:
                        entry.exitcode, entry.pid = int(e["exitcode"]), int(e["pid"])
            s = _SIGNAL_RECEIVED.search(text)
            if s:
                entry.signal = s["signal"]
        return True, entry.rank if entry is not None else None

