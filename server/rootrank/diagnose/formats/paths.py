"""Ranks and hosts told by the name of a per-rank log file.

`attempt_0/3/stderr.log` (torchrun --log-dir), `rank3.log`, `rank_3.txt`, `train_3.out`, `worker-3.log`,
`node-05/...`. A Slurm job id (`slurm-123456.out`) is not a rank.
"""

from __future__ import annotations

import re
from pathlib import PurePath

_RANK_PATTERNS = (
    # torchrun --log-dir: <run>/attempt_<n>/<local_rank>/{stdout,stderr}.log
    re.compile(r"attempt_\d+/(?P<local_rank>\d{1,5})/(?:stdout|stderr|error)(?:\.log|\.json)?$"),
    re.compile(r"(?:^|[/_.-])rank[_-]?(?P<rank>\d{1,6})(?:[/_.-]|$)", re.IGNORECASE),
    re.compile(r"(?:^|/)(?:worker|proc|process|gpu)[_-]?(?P<rank>\d{1,6})(?:[/_.-]|$)", re.IGNORECASE),
    re.compile(r"(?<!slurm)[_-](?P<rank>\d{1,5})\.(?:out|log|err|txt)$"),
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
