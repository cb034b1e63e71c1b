"""The layer-dropout table (server/rootrank/stack/layer_dropout.json) held against the real transformers: the
generator runs in each matrix column and what it reads must agree with the table, so a config check that
silences checkpoint.recompute-mismatch for `LlamaDecoderLayer` does so because transformers itself defaults
Llama's dropout to 0, on 5.x and on 4.57."""

from __future__ import annotations

import functools
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from rootrank.stack.layers import TABLE, layer_defaults, layer_names
from tests.stack.test_matrix import COLUMNS, interpreter, require_module

GENERATOR = Path(__file__).resolve().parents[2] / "scripts" / "gen_layer_dropout.py"
# The layers the config checks meet most (axolotl's and Accelerate's FSDP2 recipes, TRL's examples).
COMMON = {"LlamaDecoderLayer": False, "Qwen2DecoderLayer": False, "Qwen3DecoderLayer": False,
          "MistralDecoderLayer": False, "Gemma3DecoderLayer": False, "Phi3DecoderLayer": False,
          "GPT2Block": True, "T5Block": True, "BertLayer": True}


@functools.lru_cache(maxsize=2)
def _read(python: str) -> dict[str, Any]:
    done = subprocess.run([python, str(GENERATOR), "--print"], capture_output=True, text=True, timeout=600,
                          check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_the_table_knows_the_common_layers() -> None:
    for name, trains_with_dropout in COMMON.items():
        row = layer_defaults(name)
        assert row is not None, name
        assert bool(row.nonzero_dropout) is trains_with_dropout, (name, row)


def test_layer_names_split_as_accelerate_does() -> None:
    assert layer_names("LlamaDecoderLayer, MllamaVisionEncoderLayer") == ["LlamaDecoderLayer",
                                                                          "MllamaVisionEncoderLayer"]
    assert layer_names(["GPT2Block", 3]) == ["GPT2Block"]
    assert layer_names(None) == []


@pytest.mark.parametrize("column", sorted(COLUMNS))
def test_the_table_agrees_with_the_installed_transformers(column: str) -> None:
    require_module("transformers")
    seen = _read(str(interpreter(column)))
    table = json.loads(TABLE.read_text(encoding="utf-8"))
    if seen["transformers"] == table["transformers"]:
        assert seen["layers"] == table["layers"], "regenerate: scripts/gen_layer_dropout.py"
        return
    common = sorted(set(seen["layers"]) & set(table["layers"]))
    assert len(common) > 200, f"only {len(common)} layer classes in common with transformers {seen['transformers']}"
    # Nested sub-configs (`text_config.`) are built differently across majors; top-level settings are compared.
    disagree = [name for name in common
                if all("." not in s for s in seen["layers"][name]["nonzero"] + table["layers"][name]["nonzero"])
                and bool(seen["layers"][name]["nonzero"]) != bool(table["layers"][name]["nonzero"])]
    assert not disagree, disagree
    for name, trains_with_dropout in COMMON.items():
        assert bool(seen["layers"][name]["nonzero"]) is trains_with_dropout, (column, name)
