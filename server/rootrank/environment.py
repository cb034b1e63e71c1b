"""Which versions of the training stack the checked code runs with, read from package metadata.

Engine knowledge shared by the checker, its fixes, the hover and `rootrank explain`. Where from, first match
wins (the same order for the CLI and the editor):
  1. an explicit interpreter or environment folder (`rootrank check --python PATH`, the editor's `python`
     setting): always, even when it has none of the libraries;
  2. the active virtual environment (`VIRTUAL_ENV`, then `CONDA_PREFIX`),
  3. a `.venv`/`venv`/`env` folder next to the checked file or above it, or in a workspace root,
  4. rootrank's own interpreter.
Among 2 and 3 the first environment that has one of the training libraries wins (an empty `.venv` does not
hide the one that has torch). Nothing is imported or run: versions come from the `*.dist-info`/`*.egg-info`
folders of the environment's site-packages and of the folders its `.pth` files add (the first folder that
has a package wins, as on `sys.path`).
"""

from __future__ import annotations

import functools
import glob
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

PACKAGES = ("torch", "transformers", "peft", "trl", "accelerate", "deepspeed", "lightning", "pytorch-lightning")
_METADATA_VERSION = re.compile(r"^Version:\s*(\S+)", re.MULTILINE)

EXPLICIT = "--python"
ACTIVE = "the active virtual environment"
NEARBY = "a .venv near the file"
OWN = "rootrank's own interpreter"


class NoEnvironmentError(ValueError):
    """An explicit interpreter with no environment to read (one line, for the CLI's stderr)."""


@dataclass(frozen=True)
class Environment:
    where: str  # the site-packages folder read, or "rootrank's own interpreter"
    versions: dict[str, str]
    origin: str = OWN  # which of the four places it came from

    def version(self, package: str) -> str | None:
        return self.versions.get(package)

    def describe(self) -> str:
        """`transformers 5.24.0, torch 2.13.0 (--python: /p/.venv/lib/python3.11/site-packages)`."""
        found = ", ".join(f"{p} {v}" for p, v in sorted(self.versions.items())) or "none of the training libraries"
        return f"{found} ({self.origin}{': ' + self.where if self.where != self.origin else ''})"


def _prefix_of(python: str) -> Path:
    path = Path(python).expanduser()
    if path.is_dir():
        return path
    # <prefix>/bin/python or <prefix>\Scripts\python.exe; a symlink into a base install is not followed,
    # because a venv's own site-packages sits next to its bin/.
    return path.parent.parent


def site_packages(prefix: Path) -> list[Path]:
    patterns = ("lib/python3*/site-packages", "lib/python3*/dist-packages", "Lib/site-packages", "lib/site-packages")
    found: list[Path] = []
    for pattern in patterns:
        found.extend(Path(p) for p in sorted(glob.glob(str(prefix / pattern))))
    return found


def _with_pth(site: Path) -> list[Path]:
    """The site and the existing folders its `.pth` files name (not their `import` lines), in that order."""
    ordered = [site]
    try:
        pths = sorted(n for n in os.listdir(site) if n.endswith(".pth"))
    except OSError:
        return ordered
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


def _read_versions(site: Path) -> dict[str, str]:
    versions: dict[str, str] = {}
    for folder in _with_pth(site):
        try:
            names = os.listdir(folder)
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
                metadata = folder / name / ("METADATA" if suffix == ".dist-info" else "PKG-INFO")
                try:
                    match = _METADATA_VERSION.search(metadata.read_text(encoding="utf-8", errors="replace")[:4096])
                except OSError:
                    match = None
                versions[key] = match.group(1) if match else version.split("-")[0]
    return versions


def _own_versions() -> dict[str, str]:
    from importlib import metadata

    versions = {}
    for package in PACKAGES:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            continue
    return versions


def candidate_prefixes(python: str, roots: tuple[str, ...]) -> list[tuple[Path, str]]:
    """(prefix, origin) in the order they are tried; `roots`: the file's folder and those above it, or the
    workspace folders."""
    prefixes: list[tuple[Path, str]] = []
    if python:
        prefixes.append((_prefix_of(python), EXPLICIT))
    for variable in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        if os.environ.get(variable):
            prefixes.append((Path(os.environ[variable]), ACTIVE))
    for root in roots:
        for name in (".venv", "venv", "env", ".env"):
            prefixes.append((Path(root) / name, NEARBY))
    return prefixes


def roots_above(path: str | Path, limit: int = 12) -> tuple[str, ...]:
    """The file's folder and the folders above it (where a `.venv` may sit)."""
    start = Path(path).expanduser().resolve()
    folder = start if start.is_dir() else start.parent
    return tuple(str(p) for p in [folder, *folder.parents][:limit])


def find_environment(python: str, roots: tuple[str, ...]) -> Environment:
    """The environment the code runs in (module docstring). Raises NoEnvironmentError when `python` is given
    and has no site-packages.

    Read again at most once a minute, so installing or upgrading a library shows up without a restart.
    """
    return _find_environment(python, roots, int(time.monotonic() // 60))


@functools.lru_cache(maxsize=16)
def _find_environment(python: str, roots: tuple[str, ...], _minute: int) -> Environment:
    for prefix, origin in candidate_prefixes(python, roots):
        sites = site_packages(prefix)
        if origin == EXPLICIT:
            if not sites:
                raise NoEnvironmentError(f"--python {python}: no site-packages under {prefix}")
            return Environment(str(sites[0]), _read_versions(sites[0]), EXPLICIT)
        for site in sites:
            versions = _read_versions(site)
            if versions:
                return Environment(str(site), versions, origin)
    return Environment(OWN, _own_versions(), OWN)


def version_tuple(version: str | None) -> tuple[int, int] | None:
    if not version:
        return None
    match = re.match(r"(\d+)\.(\d+)", version)
    return (int(match.group(1)), int(match.group(2))) if match else None
