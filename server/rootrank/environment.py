"""Which torch (and friends) the user's environment has installed, read from package metadata.

Engine knowledge shared by the checker, the hover and `rootrank explain FILE:LINE`. The environment is
found without running it and without importing torch: an explicit interpreter (the editor's `python`
setting, `--python`), else an active virtual environment or conda prefix, else a `.venv`/`venv`/`env`
folder in one of the given roots (the workspace folders, or the folders above a file), else rootrank's
own interpreter. Versions come from the `*.dist-info`/`*.egg-info` folders in its site-packages.
"""

from __future__ import annotations

import functools
import glob
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

PACKAGES = ("torch", "transformers", "peft", "accelerate", "deepspeed")
_METADATA_VERSION = re.compile(r"^Version:\s*(\S+)", re.MULTILINE)


@dataclass(frozen=True)
class Environment:
    where: str  # the site-packages folder read, or "the server's environment"
    versions: dict[str, str]

    def version(self, package: str) -> str | None:
        return self.versions.get(package)


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


def _read_versions(site: Path) -> dict[str, str]:
    versions: dict[str, str] = {}
    try:
        names = os.listdir(site)
    except OSError:
        return versions
    for name in names:
        for suffix in (".dist-info", ".egg-info"):
            if not name.endswith(suffix):
                continue
            stem = name[: -len(suffix)]
            package, _, version = stem.partition("-")
            key = package.lower().replace("_", "-")
            if key not in PACKAGES or key in versions:
                continue
            metadata = site / name / "METADATA" if suffix == ".dist-info" else site / name / "PKG-INFO"
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


def candidate_prefixes(python: str, roots: tuple[str, ...]) -> list[Path]:
    prefixes: list[Path] = []
    if python:
        prefixes.append(_prefix_of(python))
    for variable in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        if os.environ.get(variable):
            prefixes.append(Path(os.environ[variable]))
    for root in roots:
        for name in (".venv", "venv", "env", ".env"):
            prefixes.append(Path(root) / name)
    return prefixes


def find_environment(python: str, roots: tuple[str, ...]) -> Environment:
    """The first environment that has torch; else the first one found; else the server's own.

    Read again at most once a minute, so installing or upgrading torch shows up without a restart.
    """
    return _find_environment(python, roots, int(time.monotonic() // 60))


@functools.lru_cache(maxsize=16)
def _find_environment(python: str, roots: tuple[str, ...], _minute: int) -> Environment:
    first: Environment | None = None
    for prefix in candidate_prefixes(python, roots):
        for site in site_packages(prefix):
            versions = _read_versions(site)
            env = Environment(str(site), versions)
            if "torch" in versions:
                return env
            first = first or env
    own = Environment("rootrank's own interpreter", _own_versions())
    if "torch" in own.versions or first is None:
        return own
    return first


def version_tuple(version: str | None) -> tuple[int, int] | None:
    if not version:
        return None
    match = re.match(r"(\d+)\.(\d+)", version)
    return (int(match.group(1)), int(match.group(2))) if match else None
