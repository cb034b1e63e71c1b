"""Rows -> JSON Lines, one `rootrank.scan/1` object per run (docs/scan.md); byte-identical for
identical rows, whichever executor produced them."""

from __future__ import annotations

import json
from collections.abc import Iterable

from rootrank.fleet.record import RunResult, row_to_json


def render_jsonl(rows: Iterable[RunResult]) -> str:
    return "".join(json.dumps(row_to_json(row), ensure_ascii=False) + "\n" for row in rows)
