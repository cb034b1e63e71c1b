#!/usr/bin/env python3
"""Writes server/rootrank/stack/layer_dropout.json from the installed transformers: for every model type, the
decoder/encoder layer classes its model keeps whole (`_no_split_modules`, the names users give FSDP's
`fsdp_transformer_layer_cls_to_wrap`) and which of its config's dropout settings default to a non-zero value.

rootrank's config check reads the table without importing transformers; tests/stack/test_layer_dropout.py
compares it with the installed transformers (and the 4.57 matrix venv when it is there).

    .venv/bin/python scripts/gen_layer_dropout.py            # rewrite the table
    .venv/bin/python scripts/gen_layer_dropout.py --print    # print it instead
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import re
import sys
import warnings
from pathlib import Path
from typing import Any

TABLE = Path(__file__).resolve().parent.parent / "server" / "rootrank" / "stack" / "layer_dropout.json"
DROPOUT_NAME = re.compile(r"dropout|pdrop", re.IGNORECASE)


def dropout_defaults(config: Any, prefix: str = "", depth: int = 0) -> dict[str, float]:
    """Every numeric `*dropout*` / `*pdrop*` attribute of a default config, nested configs (`text_config.`)
    included."""
    found: dict[str, float] = {}
    for name, value in vars(config).items():
        if DROPOUT_NAME.search(name) and isinstance(value, (int, float)) and not isinstance(value, bool):
            found[prefix + name] = float(value)
        elif depth < 3 and hasattr(value, "to_dict") and hasattr(value, "model_type"):
            found.update(dropout_defaults(value, f"{prefix}{name}.", depth + 1))
    return found


def model_types() -> dict[str, dict[str, Any]]:
    """model type -> {"layers": [...], "dropout": {name: default}} for the installed transformers; model types
    whose config or model cannot be built with defaults are left out."""
    import transformers
    from transformers.models.auto import modeling_auto
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    transformers.logging.set_verbosity_error()
    logging.disable(logging.WARNING)
    warnings.simplefilter("ignore")
    table: dict[str, dict[str, Any]] = {}
    for model_type, config_name in sorted(CONFIG_MAPPING_NAMES.items()):
        model_name = modeling_auto.MODEL_MAPPING_NAMES.get(model_type)
        if not isinstance(model_name, str):
            continue
        try:
            config = getattr(transformers, config_name)()
            layers = list(getattr(getattr(transformers, model_name), "_no_split_modules", None) or [])
        except Exception:  # a model type whose defaults do not build (needs a sub-config, a backend): skip it
            continue
        if layers:
            table[model_type] = {"layers": layers, "dropout": dropout_defaults(config)}
    return table


def layer_table(types: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """layer class -> {"model_types": [...], "nonzero": [...]} where the class's config names at least one dropout
    setting; a class shared by several model types takes the union of their non-zero settings."""
    layers: dict[str, dict[str, Any]] = {}
    for model_type, entry in types.items():
        if not entry["dropout"]:
            continue  # a config that names no dropout says nothing about the modeling code's own
        nonzero = sorted(name for name, value in entry["dropout"].items() if value)
        for layer in entry["layers"]:
            row = layers.setdefault(layer, {"model_types": [], "nonzero": []})
            row["model_types"].append(model_type)
            row["nonzero"] = sorted(set(row["nonzero"]) | set(nonzero))
    return dict(sorted(layers.items()))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--print", action="store_true", help="print the table instead of writing it")
    options = parser.parse_args()
    # transformers 4.57 prints notices to stdout while models import; keep stdout for the table
    with contextlib.redirect_stdout(sys.stderr):
        import transformers

        layers = layer_table(model_types())
    document = {
        "about": "layer class (fsdp_transformer_layer_cls_to_wrap) -> the model types that keep it whole and their "
                 "config's dropout settings that default to non-zero; written by scripts/gen_layer_dropout.py",
        "transformers": transformers.__version__,
        "layers": layers,
    }
    rows = ",\n".join(f"  {json.dumps(name)}: {json.dumps(row)}" for name, row in document["layers"].items())
    text = (f'{{"about": {json.dumps(document["about"])},\n"transformers": {json.dumps(document["transformers"])},\n'
            f'"layers": {{\n{rows}\n}}}}\n')
    if options.print:
        sys.stdout.write(text)
    else:
        TABLE.write_text(text, encoding="utf-8")
        print(f"{TABLE}: {len(document['layers'])} layer classes from transformers {transformers.__version__}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
