"""Ranks and hosts told by the name of a per-rank log file.

A name gives a rank only when it says rank: `attempt_0/3/stderr.log` (torchrun --log-dir: a local
rank), `rank3.log`, `rank-3.log`, `train.rank3.log`, `log_rank_3.txt`, `local_rank_2.log` (a local
rank), `worker_3.log`, `proc-3.out`, `gpu3.log`. A bare number is not a rank: schedulers put job and array ids in
file names (`slurm-123456.out`, `%j`, `%A_%a`: `train-123456_7.out`, `job-0038.log`), and so do
epochs, seeds and dates; `node-05/...` or `node3.log` is a host (a node index), not a rank.
"""

from __future__ import annotations

import re
from pathlib import PurePath

_RANK_PATTERNS = (
    # torchrun --log-dir: <run>/attempt_<n>/<local_rank>/{stdout,stderr}.log
    re.compile(r"attempt_\d+/(?P<local_rank>\d{1,5})/(?:stdout|stderr|error)(?:\.log|\.json)?$"),
    re.compile(r"(?:^|[/_.-])local[_-]?rank[_-]?(?P<local_rank>\d{1,5})(?:[/_.-]|$)", re.IGNORECASE),
    re.compile(r"(?:^|[/_.-])rank[_-]?(?P<rank>\d{1,6})(?:[/_.-]|$)", re.IGNORECASE),
    re.compile(r"(?:^|[/_.-])(?:worker|proc|process|gpu)[_-]?(?P<rank>\d{1,6})(?:[/_.-]|$)", re.IGNORECASE),
)
_HOST_PATTERN = re.compile(r"(?:^|/)(?P<host>(?:node|host|worker-node|gpu-node)[_-]?\d{1,5})(?:/|[._-])", re.IGNORECASE)
_NODE_RANK = re.compile(r"(?:^|/)node[_-]?(?P<node>\d{1,5})(?:/|[._-])", re.IGNORECASE)


def ranks_from_path(path: str) -> tuple[int | None, int | None, str | None]:
    """(global rank, local rank, host) that the path names; any may be None."""
    parts = PurePath(path).parts
    # Only the file name and the torchrun attempt layout count: a folder named "...-rank1-..." says nothing.
    text = "/".join(parts[-3:])
    name = parts[-1] if parts else ""
    rank = local_rank = None
    for index, pattern in enumerate(_RANK_PATTERNS):
        m = pattern.search(text if index == 0 else name)
        if not m:
            continue
        groups = m.groupdict()
        if groups.get("local_rank") is not None:
            local_rank = int(groups["local_rank"])
        elif groups.get("rank") is not None:
            rank = int(groups["rank"])
        break
    host_match = _HOST_PATTERN.search("/".join(parts[-2:]))
    return rank, local_rank, host_match.group("host") if host_match else None
