"""The engine's accounting on hand-written probe facts (no torch): nesting, inputs counted once,
regions that do not engage, the plan for a budget, sizes and the generated code."""

from __future__ import annotations

from typing import Any

import pytest

from rootrank.measure.analysis import (
    Accounting,
    _names_expression,
    analyze,
    every_n,
    parse_bytes,
    parse_probe,
)


def probe(scopes: list[dict[str, Any]], storages: list[dict[str, Any]], blocks: int = 2) -> dict[str, Any]:
    return {
        "protocol": "rootrank.measure-probe/1", "torch": "2.13.0", "device": "meta", "detection": "repeated",
        "model": {"class": "M", "training": True, "parameters": 10, "parameter_bytes": 40, "dtype": "float32"},
        "blocks": [{"index": i, "name": f"layers.{i}", "class": "Block", "parameters": 5, "training": True}
                   for i in range(blocks)],
        "scopes": scopes, "storages": storages, "flops": {"forward": 300, "step": 900},
    }


# two blocks; block 1 holds a user region (r2) around part of its body
SCOPES = [
    {"id": 0, "kind": "block", "block": 0, "parents": [], "inputs": [], "forward_flops": 100},
    {"id": 1, "kind": "block", "block": 1, "parents": [], "inputs": [0], "forward_flops": 100},
    {"id": 2, "kind": "region", "parents": [1], "inputs": [3], "forward_flops": 40, "function": "norm", "where": "m.py:9"},
]
STORAGES = [
    {"id": 0, "bytes": 100, "saves": [[0]]},      # block 0's output, saved in block 0 and input of block 1
    {"id": 1, "bytes": 500, "saves": [[0]]},
    {"id": 2, "bytes": 300, "saves": [[1, 2]]},   # saved only inside the region
    {"id": 3, "bytes": 50, "saves": [[1]]},       # saved in block 1, and the region's input
    {"id": 4, "bytes": 7, "saves": [[]]},         # outside every block
]


def test_totals_with_nesting_and_shared_inputs() -> None:
    acct = Accounting(parse_probe(probe(SCOPES, STORAGES)))
    assert acct.total([]) == 957
    assert acct.total([1]) == 100 + 500 + 7  # block 1 keeps its input (storage 0, already held) only
    assert acct.total([2]) == 957 - 300  # the region keeps storage 3, held anyway
    assert acct.total([1, 2]) == acct.total([1])  # the nested region adds nothing
    assert acct.recompute([1, 2]) == 100  # and is not recomputed on top of its block
    assert acct.per_block([]) == {0: 600, 1: 350, None: 7}


def test_a_region_that_does_not_engage_holds_nothing_and_frees_its_inside() -> None:
    scopes = [*SCOPES[:2], dict(SCOPES[2], detached=True, reentrant=True)]
    acct = Accounting(parse_probe(probe(scopes, STORAGES)))
    assert acct.total([2]) == 957 - 300
    assert acct.recompute([2]) == 0


def test_plan_for_a_budget_and_its_code() -> None:
    m = analyze(parse_probe(probe(SCOPES, STORAGES)), "m:build", budget=700)
    assert (m.plan.fits and m.plan.blocks == (1,)) or m.plan.blocks == (0,)
    assert m.configuration("plan").activation_bytes <= 700
    assert "apply_activation_checkpointing(" in m.plan.code and "first remove" in m.plan.code
    too_small = analyze(parse_probe(probe(SCOPES, STORAGES)), "m:build", budget=10)
    assert not too_small.plan.fits


def test_sizes_and_names() -> None:
    assert parse_bytes("20GiB") == 20 << 30 and parse_bytes("1.5 GB") == 1_500_000_000 and parse_bytes("512") == 512
    for bad in ("", "abc", "-1GiB", "0"):
        with pytest.raises(ValueError):
            parse_bytes(bad)
    assert _names_expression(["model.layers.0", "model.layers.1"]) == '(f"model.layers.{i}" for i in range(2))'
    assert _names_expression(["model.layers.1"]) == '(f"model.layers.{i}" for i in (1,))'
    assert _names_expression(["a", "b.c"]) == "('a', 'b.c')"
    assert every_n([0, 2, 4], 6) == 2 and every_n([0, 1], 6) is None


def test_a_transformers_layer_keeps_what_transformers_call_passes_it() -> None:
    # block 1 is called with storage 0 (hidden states) and a KV cache holding storage 5; transformers' layer
    # wrapper drops the cache (call_inputs): checkpointing the block keeps storage 0 only
    scopes = [SCOPES[0], dict(SCOPES[1], inputs=[0, 5], call_inputs=[0]), SCOPES[2]]
    storages = [*STORAGES, {"id": 5, "bytes": 64, "saves": [[1]]}]
    acct = Accounting(parse_probe(probe(scopes, storages)))
    assert acct.total([]) == 957 + 64
    assert acct.total([1]) == 100 + 500 + 7
    plain = Accounting(parse_probe(probe([SCOPES[0], dict(SCOPES[1], inputs=[0, 5]), SCOPES[2]], storages)))
    assert plain.total([1]) == 100 + 500 + 7 + 64
