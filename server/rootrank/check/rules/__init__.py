"""Code rules, one module per failure entry; importing this package registers them all.

Modules are discovered, not listed: adding a rule is adding a file here (nothing else to edit).
"""

from __future__ import annotations

import importlib
import pkgutil


def load_all() -> None:
    for module in pkgutil.iter_modules(__path__):
        if not module.name.startswith("_"):
            importlib.import_module(f"{__name__}.{module.name}")


load_all()
