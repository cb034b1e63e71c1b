"""Launcher and collector line prefixes: who printed a line (rank, local rank, host) and when.

Prefixes stack (`[default0]:[rank12]:[E817 17:40:34.22 ProcessGroupNCCL.cpp:1515] ...`,
`2026-01-09 17:40:31 master-0 >> [rank7]: ...`), so they are peeled one layer at a time, in the order
of PREFIXES. Adding a format = one `PrefixFormat` in PREFIXES (order matters: more specific first).
Ambiguous prefixes (`3: ` from `srun --label`, `host: ` from pdsh) are only trusted once a source has
shown them on many lines (see `Dialect`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from rootrank.diagnose.formats.timestamps import parse_time
from rootrank.diagnose.shapes import digit_classes
from rootrank.ranks import RankSet


@dataclass(frozen=True)
class PrefixFormat:
    name: str
    regex: re.Pattern[str]
    starts: str  # characters a line can start with for this prefix ("" = any): a cheap dispatch
    ambiguous: bool = False  # needs the source's dialect to agree before it is trusted
    # Which captures mean what: rank (global), local_rank, host, time, pid.


_DIGITS = "0123456789"
_WORD_START = _DIGITS + "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _p(name: str, pattern: str, starts: str, ambiguous: bool = False) -> PrefixFormat:
    return PrefixFormat(name, re.compile(pattern), starts, ambiguous)


_TS = r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d(?:[.,]\d{1,9})?)?(?:Z|[+-]\d\d:?\d\d)?"

PREFIXES: tuple[PrefixFormat, ...] = (
    # torch >= 2.2 adds "[rankN]:" to every line a worker prints (global rank).
    _p("torch-rank", r"\[rank(?P<rank>\d{1,6})\]:\s?", "["),
    # torchrun --tee / --role: "[default0]:", "[trainer3]:" (local rank within the node).
    _p("torchrun-role", r"\[(?!rank\d)(?P<role>[A-Za-z_][A-Za-z_-]{0,31}?)(?P<local_rank>\d{1,5})\]:\s?", "["),
    # torchrun --role set to a host name: "[gpu187:2]:", "[alphagpu12:3]:".
    _p("torchrun-host-role", r"\[(?P<host>[A-Za-z][\w.-]{0,63}):(?P<local_rank>\d{1,5})\]:\s?", "["),
    # Open MPI --tag-output: "[1,3]<stderr>:".
    _p("mpirun-tag", r"\[\d{1,6},(?P<rank>\d{1,6})\]<(?:stdout|stderr|stddiag)>:\s?", "["),
    # A rank tag in a Python logging format: "[rank3] 2025-01-01 12:00:01,234 INFO ...", or Lightning's
    # rank_prefixed_message: "[rank: 1] message" ("[Rank 3] " is c10d's
    # own message text, left to inline.py).
    _p("logging-rank-tag", r"\[rank(?:: | ?)(?P<rank>\d{1,6})\]\s", "["),
    # Determined: "[rank=1] || ".
    _p("determined-rank", r"\[rank=(?P<rank>\d{1,6})\]\s\|\|\s?", "["),
    # Ray: "(WorkerDict pid=835, ip=172.26.143.83) ", "(pid=4009) ", "(axolotl-hi-2-spot, pid=16959) ".
    _p("ray-worker", r"\((?:[\w.:-]{1,64},?\s)?pid=(?P<pid>\d{1,9})(?:,\sip=(?P<host>[\d.]{7,15}))?\)\s", "("),
    # kubectl logs --prefix (one pod per worker, a PyTorchJob's master-0/worker-N): "[pod/trainjob-worker-1/pytorch] ".
    # The pod is the machine its ranks run on.
    _p("kubectl-prefix", r"\[pod/(?P<host>[a-z0-9][a-z0-9.-]{0,252})/[\w.-]{1,63}\]\s", "["),
    # Kernel log lines as syslog/journalctl print them: "Dec  2 03:12:01 node-b kernel: [ 84.73] NVRM: ...",
    # "2026-12-02T03:12:01+0000 node-b kernel: ...". They carry no rank: the host is what ties them to ranks.
    _p("syslog-kernel", rf"(?:[A-Z][a-z]{{2}}\s{{1,2}}\d{{1,2}}\s\d\d:\d\d:\d\d|{_TS})\s(?P<host>[\w.-]{{1,64}})\s"
                        r"kernel:\s(?:\[\s{0,12}\d{1,12}\.\d{1,9}\]\s)?", _DIGITS + "ADFJMNOS"),
    # A container runtime's own log file (CRI: containerd, CRI-O; /var/log/pods/.../0.log, what a log shipper
    # forwards): "2026-12-03T16:40:12.123456789Z stderr F " (F a full line, P a part of a longer one).
    _p("cri-log", rf"(?P<time>{_TS})\s(?:stdout|stderr)\s[PF]\s", _DIGITS),
    # journalctl's short format and moreutils `ts`: "Dec 03 16:40:12 node-b python[4242]: ", "Dec 03 16:40:12 ".
    _p("syslog-stamp", r"(?P<time>(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)\s{1,2}\d{1,2}\s\d\d:\d\d:\d\d"
                       r"(?:\.\d{1,9})?)\s(?:(?P<host>[\w.-]{1,64})\s[\w@.-]{1,64}\[\d{1,9}\]:\s)?", "ADFJMNOS"),
    # Collector timestamps in front of everything: ISO 8601 (container runtime), with an optional pod name.
    _p("iso-stamp", rf"(?P<time>{_TS}):?\s+(?:(?P<host>[\w.-]{{1,64}})\s>>\s)?", _DIGITS),
    _p("bracket-iso-stamp", rf"[\[【](?P<time>{_TS})[\]】]\s?", "[【"),
    _p("cloudwatch", rf"\s*\|\s(?P<time>{_TS})\s\|\s", " |"),
    _p("clock-stamp", r"(?P<time>\d\d:\d\d:\d\d\.\d{3})\s(?=\[)", _DIGITS),
    # glog header of torchelastic / c10d Python logging: "W1129 23:34:51.266000 14686 torch/.../api.py:908] ".
    _p("glog", r"(?P<glog>[IWEF]\d{3,4}\s\d\d:\d\d:\d\d\.\d{1,9})\s+(?P<pid>\d{1,16})\s+[\w/.+-]{1,200}:\d{1,6}\]\s?", "IWEF"),
    # vLLM's logger (vllm/logger.py: "%(levelname)s %(asctime)s [%(filename)s:%(lineno)d] %(message)s", date
    # "%m-%d %H:%M:%S"), on the lines of a logged error: logger.exception prints every line of its traceback
    # behind it. INFO and WARNING lines keep it, so that a warning still reads as one.
    _p("vllm-error", r"(?:ERROR|CRITICAL)\s\d\d-\d\d\s\d\d:\d\d:\d\d(?:\.\d{1,6})?\s\[[\w./-]{1,200}:\d{1,6}\]\s?", "EC"),
    # bracketed glog of c10d C++: "[E1026 04:01:30.105007493 ProcessGroupNCCL.cpp:1858] ", "[E ProcessGroupNCCL.cpp:566] ".
    _p("glog-bracket", r"\[(?:(?P<glog>[IWEF]\d{3,4}\s\d\d:\d\d:\d\d\.\d{1,9})|[IWEF])\s[\w/.+-]{1,200}:\d{1,6}\]\s?", "["),
    # Line numbers a log viewer or an editor put in front of a pasted excerpt: "[80746] [rank0]:[E321 ...".
    # Only when they count up line by line (see Dialect): a bracketed number that repeats may be a rank.
    _p("line-number", r"\[\d{1,9}\]\s", "[", ambiguous=True),
    # A log pasted as a Markdown quote (issue threads, chat): "> [rank1]: ...".
    _p("markdown-quote", r">[ \t]?", ">", ambiguous=True),
    # A log pasted as an indented Markdown code block (four spaces or a tab before every line).
    _p("markdown-indent", r"(?:\x20{4}|\t)", " \t", ambiguous=True),
    # A paste whose every line starts with one space (copied out of a web page, a chat or a table cell):
    # " 2025-02-18 12:54 [rank13]:[E218 ...". Exactly one: a traceback's own indentation then stays.
    _p("leading-space", r"\x20(?=\S)", " ", ambiguous=True),
    # A failure pytest reported: every line of the exception's text after "E" and seven spaces
    # ("E       -- Process 3 terminated with the following error:"); a traceback's own indentation stays.
    _p("pytest-failure", r"E(?:\x20{1,7}|$)", "E", ambiguous=True),
    # docker compose / container log multiplexers: "trainer-1  | ...", "worker-0 | ...".
    _p("container-name", r"(?P<host>[A-Za-z][\w.-]{0,62})\s{1,16}\|\s?", _WORD_START, ambiguous=True),
    # srun --label: "3: " (task id = global rank, or the node's task under one torchrun agent per node: see
    # Dialect); only when the whole source uses it.
    _p("srun-label", r"\s{0,4}(?P<rank>\d{1,5}):\s", " " + _DIGITS, ambiguous=True),
    # pdsh / DeepSpeed multi-node runner: "node-05: ", "192.168.12.21: ".
    _p("pdsh-host", r"(?!\d{1,5}:)(?![\w.]*(?:Error|Exception|Warning|Interrupt):)(?P<host>(?=[\w.-]*[\d.-])"
                    r"[A-Za-z0-9][\w.-]{0,62}):\s", _WORD_START, ambiguous=True),
)

_BY_NAME = {p.name: p for p in PREFIXES}


def _dispatch() -> dict[str, tuple[PrefixFormat, ...]]:
    chars = {c for p in PREFIXES for c in p.starts}
    return {c: tuple(p for p in PREFIXES if c in p.starts) for c in chars}


_BY_FIRST_CHAR = _dispatch()


@dataclass(slots=True)
class Peeled:
    text: str
    rank: int | None = None
    local_rank: int | None = None
    host: str | None = None
    time: float | None = None
    pid: int | None = None


Span = tuple[int, int]


@dataclass(frozen=True, slots=True)
class PeelPlan:
    """Where peel finds things in a line: the end of its prefixes, the spans of what they say, and the
    stamps in the order peel would try them (a stamp that does not parse as a time leaves the time to a
    later layer). The same for every line of one shape (shapes.py: PREFIX_DIGITS)."""

    end: int
    rank: Span | None
    local_rank: Span | None
    host: Span | None
    pid: Span | None
    stamps: tuple[Span, ...]
    host_label: str = ""  # put before the host span's text (an srun node label names "task N")


def peel(line: str, dialect: frozenset[str] = frozenset(), max_layers: int = 6) -> Peeled:
    """Remove the launcher/collector prefixes at the start of `line` and report what they said."""
    return apply_plan(line, peel_plan(line, dialect, max_layers))


def apply_plan(line: str, plan: PeelPlan) -> Peeled:
    """What the prefixes located by `plan` say in `line` (a line of the plan's shape)."""
    time: float | None = None
    for start, end in plan.stamps:
        time = parse_time(line[start:end])
        if time is not None:
            break
    return Peeled(line[plan.end:] if plan.end else line,
                  None if plan.rank is None else int(line[plan.rank[0]: plan.rank[1]]),
                  None if plan.local_rank is None else int(line[plan.local_rank[0]: plan.local_rank[1]]),
                  None if plan.host is None else plan.host_label + line[plan.host[0]: plan.host[1]],
                  time,
                  None if plan.pid is None else int(line[plan.pid[0]: plan.pid[1]]))


def peel_plan(line: str, dialect: frozenset[str] = frozenset(), max_layers: int = 6) -> PeelPlan:
    """Where the prefixes at the start of `line` are, and where what they say is."""
    text = line
    offset = 0
    rank: Span | None = None
    local_rank: Span | None = None
    pid: Span | None = None
    host: Span | None = None
    host_label = ""
    stamps: list[Span] = []
    for layer in range(max_layers):
        for fmt in _BY_FIRST_CHAR.get(text[:1], ()):
            # "3: " and "host: " are only trusted at the very start: deeper, they are message text
            # ("torch.OutOfMemoryError: ...").
            node_label = fmt.name == "srun-label" and SRUN_NODE_LABEL in dialect
            if fmt.ambiguous and (layer > 0 or (fmt.name not in dialect and not node_label)):
                continue
            m = fmt.regex.match(text)
            if not m or m.end() == 0:
                continue
            if node_label:
                # `srun --label` in front of one torchrun agent per node: the label is the task (the
                # node's agent), not a rank; the workers' own "[rankN]:" tags follow it.
                if host is None:
                    host, host_label = _shifted(m.span("rank"), offset), "task "
                offset += m.end()
                text = text[m.end():]
                break
            groups = fmt.regex.groupindex  # only the captures this format has are looked at
            if rank is None and "rank" in groups and m["rank"] is not None:
                rank = _shifted(m.span("rank"), offset)
            if local_rank is None and "local_rank" in groups and m["local_rank"] is not None:
                local_rank = _shifted(m.span("local_rank"), offset)
            if host is None and "host" in groups and m["host"]:
                host = _shifted(m.span("host"), offset)
            if pid is None and "pid" in groups and m["pid"]:
                pid = _shifted(m.span("pid"), offset)
            stamp = ("time" if "time" in groups and m["time"] else
                     "glog" if "glog" in groups and m["glog"] else None)
            if stamp is not None:
                stamps.append(_shifted(m.span(stamp), offset))
            offset += m.end()
            text = text[m.end():]
            break
        else:
            break
    return PeelPlan(offset, rank, local_rank, host, pid, tuple(stamps), host_label)


def _shifted(span: Span, offset: int) -> Span:
    return span[0] + offset, span[1] + offset


# The digits the prefixes tell apart (in their regexes and in which formats a first character tries).
PREFIX_DIGITS = digit_classes([*(fmt.regex for fmt in PREFIXES),
                               *("[" + "".join(d for d in _DIGITS if d in fmt.starts) + "]"
                                 for fmt in PREFIXES if any(d in fmt.starts for d in _DIGITS))])


SRUN_NODE_LABEL = "srun-label-node"  # a dialect: srun's "N: " labels a node's task, not a rank
_LINE_NUMBER = re.compile(r"\[(\d{1,9})\]\s")
_LABELLED_RANK = re.compile(r"\s{0,4}(\d{1,5}):\s\[rank(\d{1,6})\]:")


class Dialect:
    """Decides, from the first lines of a source, whether its ambiguous prefixes are real.

    `srun --label` prefixes the task id: the global rank when srun starts one task per rank, the node
    when it starts one torchrun agent per node. The workers' "[rankN]:" tags after the label tell
    which: labels that disagree with them on most tagged lines name nodes (SRUN_NODE_LABEL).
    """

    SAMPLE = 400
    MIN_SHARE = 0.3
    # Tracebacks indent a third of their lines by themselves: only a block indented as a whole is a paste.
    MIN_SHARES: ClassVar[dict[str, float]] = {"markdown-indent": 0.95, "leading-space": 0.8, "pytest-failure": 0.8}

    def __init__(self) -> None:
        self.seen = 0
        self.hits = {name: 0 for name, fmt in _BY_NAME.items() if fmt.ambiguous}
        self.hosts: set[str] = set()
        self.numbered = 0  # "[N] " lines whose N is the previous one's plus one
        self._last_number: int | None = None
        self.label_is_rank = 0  # "3: [rank3]:"
        self.label_is_not_rank = 0  # "1: [rank3]:"

    def observe(self, line: str) -> None:
        if not line.strip():
            return
        self.seen += 1
        numbered = _LINE_NUMBER.match(line)
        if numbered:
            number = int(numbered[1])
            if self._last_number is not None and number == self._last_number + 1:
                self.numbered += 1
            self._last_number = number
        tagged = _LABELLED_RANK.match(line)
        if tagged:
            if tagged[1] == tagged[2]:
                self.label_is_rank += 1
            else:
                self.label_is_not_rank += 1
        for name in self.hits:
            m = _BY_NAME[name].regex.match(line)
            if m:
                self.hits[name] += 1
                if name == "pdsh-host":
                    self.hosts.add(m.group("host"))

    def decide(self) -> frozenset[str]:
        if self.seen == 0:
            return frozenset()
        chosen = {n for n, c in self.hits.items()
                  if c / self.seen >= self.MIN_SHARES.get(n, self.MIN_SHARE) and c >= 3}
        if "pdsh-host" in chosen and len(self.hosts) > 64:
            chosen.discard("pdsh-host")
        if "line-number" in chosen and self.numbered < max(2, self.hits["line-number"] * 0.8 - 1):
            chosen.discard("line-number")  # the bracketed numbers do not count lines: ranks, perhaps
        if "srun-label" in chosen and self.label_is_not_rank >= 2 and self.label_is_not_rank > self.label_is_rank:
            chosen.discard("srun-label")
            chosen.add(SRUN_NODE_LABEL)
        return frozenset(chosen)


class _LineStarts:
    """`re.compile(b"(?m)^" + body).findall`, for a body that matches within one line: the regex engine
    tries a `^` at every byte (14 ms per 4 MiB), so the matches after a newline are found by a regex led
    by the newline, which it skips to at memchr speed, and the one at the very start by itself."""

    def __init__(self, body: bytes) -> None:
        self.after_newline = re.compile(b"\n" + body)
        self.first = re.compile(body)

    def findall(self, buf: bytes | bytearray, start: int, end: int) -> list[bytes]:
        # A line starts at `start` when it follows a newline (searched from the byte before, the newline-led
        # regex finds it there as `^` would) or when `start` is the buffer's start.
        found: list[bytes] = self.after_newline.findall(buf, max(start - 1, 0), end)
        if start == 0 and (first := self.first.match(buf, 0, end)) is not None:
            found.append(first[1])
        return found


class RankCensus:
    """Who printed at all: rank prefixes swept over whole byte chunks in C, not line by line in Python.

    A hung rank is found as the one that printed but did not time out; that needs every rank that
    printed anything, including ranks whose lines the prefilter skips.
    """

    _GLOBAL = re.compile(rb"\[rank(?:: )?(\d{1,6})\](?::| (?=\S))")
    _MPI = _LineStarts(rb"\[\d{1,6},(\d{1,6})\]<std")
    _LOCAL = _LineStarts(rb"\[(?!rank\d)[A-Za-z_][\w.-]{0,63}?:?(\d{1,5})\]:")

    def __init__(self) -> None:
        self.ranks = RankSet()  # a million ranks cost bits
        self.local_ranks: set[int] = set()

    def sweep(self, buf: bytes | bytearray, start: int, end: int) -> None:
        if b"[rank" in buf:
            self.ranks.update(int(r) for r in set(self._GLOBAL.findall(buf, start, end)))
        if b"]<std" in buf:
            self.ranks.update(int(r) for r in set(self._MPI.findall(buf, start, end)))
        if b"]:" in buf:
            self.local_ranks.update(int(r) for r in set(self._LOCAL.findall(buf, start, end)))
