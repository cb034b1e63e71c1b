"""What a model's layers do by default, read from layer_dropout.json (written from transformers by
scripts/gen_layer_dropout.py): for a layer class a config names (`fsdp_transformer_layer_cls_to_wrap:
LlamaDecoderLayer`), whether its model's config trains with dropout unless told otherwise.

Engine side: read without importing transformers; tests/stack/test_layer_dropout.py holds the table against the
installed library.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path

TABLE = Path(__file__).with_name("layer_dropout.json")


@dataclass(frozen=True, slots=True)
class LayerDefaults:
    layer: str
    model_types: tuple[str, ...]
    nonzero_dropout: tuple[str, ...]  # the config's dropout settings whose default is not 0
    transformers: str  # the version the table was read from


@functools.cache
def _table() -> dict[str, LayerDefaults]:
    try:
        document = json.loads(TABLE.read_text(encoding="utf-8"))
        version = str(document["transformers"])
        return {name: LayerDefaults(name, tuple(row["model_types"]), tuple(row["nonzero"]), version)
                for name, row in document["layers"].items()}
    except (OSError, ValueError, KeyError, TypeError):
        return {}  # a damaged install: every layer is unknown, and the checks say what they cannot tell


def layer_defaults(name: str) -> LayerDefaults | None:
    """The defaults of one layer class, or None when transformers (as read) has no model that keeps it whole."""
    return _table().get(name.strip())


def layer_names(value: object) -> list[str]:
    """The layer classes of a `fsdp_transformer_layer_cls_to_wrap` value: one name, a comma-separated string
    (Accelerate splits it on commas) or a list."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, list):
        return [part.strip() for part in value if isinstance(part, str) and part.strip()]
    return []
