"""Derived fields and flags for an entry's fix, computed from what its patterns captured.

Functions are keyed by entry id, like code checks: the YAML says what to advise under a flag
(`fix.variants[].when.flag`), this module says when the flag holds.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable

Enricher = Callable[[dict[str, str]], dict[str, str]]
ENRICHERS: dict[str, Enricher] = {}

# Starts only where no digit precedes (a run of digits is one start, not one per digit).
_SIZE = re.compile(r"(?<![\d.])(?P<value>\d{1,20}(?:\.\d{1,20})?)[ \t]{0,4}(?P<unit>[KMGTP]?i?B|bytes)", re.IGNORECASE)
HELD_ELSEWHERE_SHARE = 0.25  # PyTorch's share of a full GPU below which the rest is someone else's
_UNIT = {"b": 1, "bytes": 1, "kib": 2**10, "kb": 10**3, "mib": 2**20, "mb": 10**6, "gib": 2**30, "gb": 10**9,
         "tib": 2**40, "tb": 10**12, "pib": 2**50, "pb": 10**15}


def enricher(entry_id: str) -> Callable[[Enricher], Enricher]:
    def register(func: Enricher) -> Enricher:
        if entry_id in ENRICHERS:
            raise ValueError(f"duplicate enricher for {entry_id}")
        ENRICHERS[entry_id] = func
        return func

    return register


def size_in_bytes(text: str | None) -> float | None:
    if not text:
        return None
    m = _SIZE.search(text)
    if not m:
        return None
    factor = _UNIT.get(m["unit"].lower())
    return float(m["value"]) * factor if factor else None


def format_size(value: float) -> str:
    for unit, factor in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if value >= factor:
            return f"{value / factor:.2f} {unit}"
    return f"{value:.0f} bytes"


@enricher("memory.cuda-oom")
def _cuda_oom(fields: dict[str, str]) -> dict[str, str]:
    """Fragmentation when reserved-but-unallocated memory could have served the request."""
    out: dict[str, str] = {}
    requested = size_in_bytes(fields.get("requested"))
    unallocated = size_in_bytes(fields.get("reserved_unallocated"))
    if unallocated is None:
        reserved = size_in_bytes(fields.get("reserved"))
        allocated = size_in_bytes(fields.get("allocated"))
        if reserved is not None and allocated is not None:
            unallocated = max(reserved - allocated, 0.0)
            out["reserved_unallocated"] = format_size(unallocated)
    total, free = size_in_bytes(fields.get("total")), size_in_bytes(fields.get("free"))
    held = size_in_bytes(fields.get("reserved"))
    if held is None and unallocated is not None and size_in_bytes(fields.get("allocated")) is not None:
        held = (size_in_bytes(fields.get("allocated")) or 0.0) + unallocated
    if (total and held is not None and free is not None and requested is not None
            and held < HELD_ELSEWHERE_SHARE * total and free < requested + 2**30):
        # The GPU is full, but not of this process's PyTorch memory: another process on the same device.
        out["held_elsewhere"] = "true"
        out["pytorch_held"] = format_size(held)
        return out
    if requested is not None and unallocated is not None:
        if unallocated >= requested or unallocated >= 2**30:
            out["fragmented"] = "true"
        else:
            out["capacity"] = "true"
    return out


def enrich(entry_id: str, fields: dict[str, str]) -> dict[str, str]:
    func = ENRICHERS.get(entry_id)
    if func is None:
        return dict(fields)
    merged = dict(fields)
    with contextlib.suppress(ValueError, ArithmeticError):
        merged.update(func(fields))
    return merged
