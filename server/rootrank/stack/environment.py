"""Which versions of the training stack the checked code runs with, read from package metadata.

Where from, first match wins (the same order for the CLI and the editor):
  1. an explicit interpreter (`rootrank check --python PATH`, the editor's `python` setting),
  2. the active virtual environment (`VIRTUAL_ENV`, then `CONDA_PREFIX`),
  3. a `.venv`/`venv` folder in the checked file's folder or one above it (or in a workspace root),
  4. rootrank's own interpreter.
Nothing is imported or run: versions come from the `*.dist-info`/`*.egg-info` folders of the environment's
site-packages, and of the folders its `.pth` files add (the first folder that has a package wins, as on
`sys.path`).
"""

from __future__ import annotations

import functools
import glob
import os
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

PACKAGES = ("torch", "transformers", "peft", "trl", "accelerate", "deepspeed", "lightning", "pytorch-lightning")
_METADATA_VERSION = re.compile(r"^Version:\s*(\S+)", re.MULTILINE)

EXPLICIT = "--python"
ACTIVE = "the active virtual environment"
NEARBY = "a .venv above the file"
OWN = "rootrank's own interpreter"


class StackError(ValueError):
    """An explicit interpreter that has no environment to read (one line, for the CLI's stderr)."""


@dataclass(frozen=True, slots=True)
class Stack:
    versions: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    origin: str = OWN  # which of the four places the versions came from
    where: str = ""  # the site-packages folder read ("" for rootrank's own interpreter)

    def version(self, package: str) -> str | None:
        return self.versions.get(package)

    def describe(self) -> str:
        """`transformers 5.24.0, torch 2.13.0 (a .venv above the file: /p/.venv/lib/python3.11/site-packages)`."""
        found = ", ".join(f"{p} {v}" for p, v in sorted(self.versions.items())) or "no training libraries"
        return f"{found} ({self.origin}{': ' + self.where if self.where else ''})"


UNKNOWN = Stack(MappingProxyType({}), "no environment", "")


def prefix_of(python: str) -> Path:
    path = Path(python).expanduser()
    if path.is_dir():
        return path
    # <prefix>/bin/python or <prefix>\Scripts\python.exe; the symlink into a base install is not followed,
    # because a venv's own site-packages sits next to its bin/.
    return path.parent.parent


def site_packages(prefix: Path) -> list[Path]:
    patterns = ("lib/python3*/site-packages", "lib/python3*/dist-packages", "Lib/site-packages", "lib/site-packages")
    found: list[Path] = []
    for pattern in patterns:
        found.extend(Path(p) for p in sorted(glob.glob(str(prefix / pattern))))
    return found


def _with_pth(sites: Iterable[Path]) -> list[Path]:
    """The sites and, after each, the existing folders its `.pth` files name (not their `import` lines)."""
    ordered: list[Path] = []
    for site in sites:
        ordered.append(site)
        try:
            pths = sorted(n for n in os.listdir(site) if n.endswith(".pth"))
        except OSError:
            continue
        for name in pths:
            try:
                lines = (site / name).read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                continue
            for line in lines:
                line = line.strip()
                if not line or line.startswith(("#", "import ", "import\t")):
                    continue
                extra = Path(line) if os.path.isabs(line) else site / line
                if extra.is_dir() and extra not in ordered:
                    ordered.append(extra)
    return ordered


def read_versions(sites: Iterable[Path]) -> dict[str, str]:
    versions: dict[str, str] = {}
    for site in _with_pth(sites):
        try:
            names = os.listdir(site)
        except OSError:
            continue
        for name in names:
            for suffix in (".dist-info", ".egg-info"):
                if not name.endswith(suffix):
                    continue
                package, _, version = name[: -len(suffix)].partition("-")
                key = package.lower().replace("_", "-")
                if key not in PACKAGES or key in versions:
                    continue
                metadata = site / name / ("METADATA" if suffix == ".dist-info" else "PKG-INFO")
                try:
                    match = _METADATA_VERSION.search(metadata.read_text(encoding="utf-8", errors="replace")[:4096])
                except OSError:
                    match = None
                versions[key] = match.group(1) if match else version.split("-")[0]
    return versions


def own_versions() -> dict[str, str]:
    from importlib import metadata

    versions = {}
    for package in PACKAGES:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            continue
    return versions


def _nearby_prefixes(file: str | None, roots: tuple[str, ...]) -> list[Path]:
    folders: list[Path] = []
    if file:
        start = Path(file).expanduser().resolve()
        folders.extend(([start] if start.is_dir() else []) + list(start.parents))
    folders.extend(Path(r) for r in roots)
    return [folder / name for folder in folders for name in (".venv", "venv")]


def find_stack(python: str | None = None, file: str | None = None, roots: tuple[str, ...] = ()) -> Stack:
    """The versions for code at `file`; `python` (an interpreter or an environment folder) wins when given.

    Raises StackError when `python` is given and has no site-packages.
    """
    if python:
        prefix = prefix_of(python)
        sites = site_packages(prefix)
        if not sites:
            raise StackError(f"--python {python}: no site-packages under {prefix}")
        return _stack(tuple(str(s) for s in sites), EXPLICIT)
    for variable in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        if os.environ.get(variable):
            sites = site_packages(Path(os.environ[variable]))
            if sites:
                return _stack(tuple(str(s) for s in sites), ACTIVE)
    for prefix in _nearby_prefixes(file, roots):
        sites = site_packages(prefix)
        if sites:
            return _stack(tuple(str(s) for s in sites), NEARBY)
    return Stack(MappingProxyType(own_versions()), OWN, sys.prefix)


@functools.lru_cache(maxsize=32)
def _stack(sites: tuple[str, ...], origin: str) -> Stack:
    return Stack(MappingProxyType(read_versions(Path(s) for s in sites)), origin, sites[0])


def clear_cache() -> None:
    """Forget what was read (the editor calls it when the environment may have changed)."""
    _stack.cache_clear()
