"""Hostile failure entries: each broken file is refused with its path and reason in `library.problems`, no
code in it runs, and every other entry still loads (through the API and through the CLI's ROOTRANK_RULES)."""

from __future__ import annotations

import copy
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from rootrank.library import load_library
from tests.trust.conftest import REPO, ROOT_CAUSE_LOG, assert_well_behaved, run_cli

RULES = REPO / "rules"
BASE = yaml.safe_load((RULES / "memory" / "cuda-oom.yaml").read_text(encoding="utf-8"))
BASE_IDS = set(load_library(str(RULES)).entries)


def entry(new_id: str, change: Callable[[dict[str, Any]], Any] = lambda d: None) -> str:
    data = copy.deepcopy(BASE)
    data["id"] = f"memory.{new_id}"
    change(data)
    return yaml.safe_dump(data, sort_keys=False)


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        for key in parents:
            data = data[key]
        data[last] = value
    return change


def _log(regex: str) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        data["log"] = [{"name": "evil", "regex": regex, "literal": "out of memory", "source": "x", "versions": "*"}]
        data["examples"] = {"match": ["CUDA out of memory"], "no_match": []}
    return change


def python_tag(marker: Path) -> bytes:
    return (f'id: memory.pwned\ntitle: !!python/object/apply:os.system ["touch {marker}"]\n'
            f'summary: !!python/object/apply:subprocess.check_output [["touch", "{marker}"]]\n').encode()


BILLION_LAUGHS = b"""id: memory.lol
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
title: *i
"""

# name -> (file bytes, the field named in the problem, a word of the reason)
HOSTILE: dict[str, tuple[bytes, str, str]] = {
    "billion-laughs": (BILLION_LAUGHS, "<file>", "alias"),
    "missing-field": (entry("notitle", lambda d: d.pop("title")).encode(), "title", "missing"),
    "bad-regex": (entry("badregex", _log(r"CUDA (out of memory")).encode(), "log[0].regex", "compile"),
    "non-utf8": (entry("latin1").encode("utf-8").replace(b"CUDA", b"CUDA \xff\xfe", 1), "<file>", "utf-8"),
    "a-list": (b"- id: memory.listed\n- title: x\n", "<file>", "mapping"),
    "a-scalar": (b"just a string\n", "<file>", "mapping"),
    "empty": (b"", "<file>", "mapping"),
    "too-big": (b"id: memory.big\ntitle: " + b"x" * 1_100_000 + b"\n", "<file>", "bytes"),
    "deep-nesting": (b"[" * 20_000 + b"]" * 20_000, "<file>", "not a valid entry"),
    "unhashable-key": (b"? [1, 2]\n: x\n", "<file>", "not a valid entry"),
    "tab-indent": (b"id: memory.tabs\ntitle:\n\t- x\n", "<file>", "not a valid entry"),
    "bad-id": (entry("x", _set("id", "../../etc/passwd")).encode(), "id", "category"),
    "wrong-types": (entry("types", lambda d: d.update(symptoms="oops", references=[1], priority="high",
                                                       severity=["error"], log={"regex": 1})).encode(),
                    "symptoms", "list"),
    "short-literal": (entry("shortlit", lambda d: (_log(r"oom")(d), d["log"][0].update(literal="oom"))).encode(),
                      "log[0].literal", "4 bytes"),
    "duplicate-id": (entry("cuda-oom", lambda d: None).encode(), "id", "duplicate"),
}

# Files that crash the loader instead of being refused: the whole library fails to load.
CRASHING: dict[str, tuple[bytes, str, str]] = {
    "catastrophic-regex": (entry("redos", _log(r"out of memory(a+)+b")).encode(), "log[0].regex", "backtrack"),
    "variant-stack-list": (entry("stacklist", _set("fix.variants", [{"when": {"stack": [["deepspeed"]]},
                                                                      "text": "x"}])).encode(),
                           "fix.variants[0].when.stack", "stack"),
    "variant-mixed-keys": (entry("mixedkeys", _set("fix.variants", [{"when": {1: "x", "foo": "y"},
                                                                      "text": "x"}])).encode(),
                           "fix.variants[0].when", "unknown"),
    "variant-stack-int": (entry("stackint", _set("fix.variants", [{"when": {"stack": 5}, "text": "x"}])).encode(),
                          "fix.variants[0].when.stack", "stack"),
    "variants-not-a-list": (entry("varint", _set("fix.variants", 5)).encode(), "fix.variants", "list"),
    "examples-match-int": (entry("exint", _set("examples.match", 5)).encode(), "examples.match", "list"),
}
def rules_copy(tmp_path: Path, files: dict[str, bytes]) -> Path:
    root = tmp_path / "rules"
    shutil.copytree(RULES, root)
    for name, data in files.items():
        (root / "memory" / f"zz-{name}.yaml").write_bytes(data)
    return root


def check_refused(root: Path, name: str, field: str, reason: str) -> None:
    library = load_library(str(root))
    path = root / "memory" / f"zz-{name}.yaml"
    mine = [p for p in library.problems if Path(p.path) == path]
    assert mine, [str(p) for p in library.problems]
    assert any(p.field == field and reason.lower() in p.problem.lower() for p in mine), [str(p) for p in mine]
    assert all(p.skipped for p in mine)
    assert set(library.entries) == BASE_IDS, set(library.entries) ^ BASE_IDS
    others = [p for p in library.problems if Path(p.path) != path]
    assert not [p for p in others if p.skipped], [str(p) for p in others]


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_entry_is_refused_and_the_rest_load(name: str, tmp_path: Path) -> None:
    data, field, reason = HOSTILE[name]
    root = rules_copy(tmp_path, {name: data})
    if name == "duplicate-id":  # the copy sorts after the original, so the copy is the one refused
        field, reason = "id", "duplicate"
    check_refused(root, name, field, reason)


@pytest.mark.parametrize("name", sorted(CRASHING))
def test_hostile_entry_that_crashes_the_loader(name: str, tmp_path: Path) -> None:
    data, field, reason = CRASHING[name]
    check_refused(rules_copy(tmp_path, {name: data}), name, field, reason)


def test_python_tags_never_run(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    root = rules_copy(tmp_path, {"python-tag": python_tag(marker)})
    check_refused(root, "python-tag", "<file>", "not a valid entry")
    assert not marker.exists()


def test_cli_with_hostile_rules_dir(audit, tmp_path: Path) -> None:
    """Every refused file is named on stderr, no program ran, and diagnose still works with the rest."""
    env, events = audit
    marker = tmp_path / "pwned"
    files = {name: data for name, (data, _, _) in HOSTILE.items()}
    files["python-tag"] = python_tag(marker)
    root = rules_copy(tmp_path, files)
    env["ROOTRANK_RULES"] = str(root)
    rules = run_cli(["rules", "--format", "json"], env=env)
    assert rules.returncode == 0, rules.stderr
    assert {r["id"] for r in json.loads(rules.stdout)["rules"]} == BASE_IDS
    for name in files:
        assert f"zz-{name}.yaml" in rules.stderr, (name, rules.stderr[-3000:])
    assert "Traceback" not in rules.stderr
    diagnosis = run_cli(["diagnose", "--format", "json", str(ROOT_CAUSE_LOG)], env=env)
    data = assert_well_behaved(diagnosis)
    assert data["root_cause"]["rank"] == 2
    assert not marker.exists()
    assert not [e for e in events() if not e.startswith("socket.__new__")], events()


def test_cli_survives_a_loader_crashing_entry(tmp_path: Path) -> None:
    root = rules_copy(tmp_path, {"stacklist": CRASHING["variant-stack-list"][0]})
    from tests.trust.conftest import cli_env

    run = run_cli(["diagnose", "--format", "json", str(ROOT_CAUSE_LOG)], env=cli_env(ROOTRANK_RULES=str(root)))
    data = assert_well_behaved(run)
    assert data["root_cause"]["rank"] == 2
