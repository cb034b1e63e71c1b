"""The version-facts table (server/rootrank/stack/versions.yaml) and the environment reader, without the libraries."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from rootrank.check.registry import RULES
from rootrank.environment import NoEnvironmentError, find_environment
from rootrank.library import load_library
from rootrank.stack import facts
from rootrank.stack.version import Specifier, Version

HERE = Path(__file__).parent
TOPICS = facts.load_topics()


def test_versions_order_as_pep_440() -> None:
    v = Version.parse
    assert v("5.0.0rc1") < v("5.0.0") == v("5.0") == v("5.0.0+cpu") < v("5.0.0.post1") < v("5.0.1")
    assert v("2.13.0+cpu") == v("2.13.0") and v("4.57.6") < v("5.0.0") and v("not a version") is None
    spec = Specifier.parse(">=4.38.0,<5.0.0")
    assert spec.admits("4.38.0") and spec.admits("4.57.6") and not spec.admits("5.0.0") and not spec.admits("4.37.2")
    assert Specifier.parse("==2.13.*").admits("2.13.0+cpu") and not Specifier.parse("==2.13.*").admits("2.14.0")
    with pytest.raises(ValueError):
        Specifier.parse("~=1.0")


@pytest.mark.parametrize("topic", sorted(TOPICS), ids=str)
def test_each_row_names_its_upstream_source(topic: str) -> None:
    t = TOPICS[topic]
    assert t.library and t.meaning and t.rows
    for row in t.rows:
        # file:line (version) or file (version: ...) for "not present in that release"
        assert re.search(r"\w+\.py(?::[\d, -]+)? \([^)]*\d+\.\d+", row.source), row.source


@pytest.mark.parametrize("topic", sorted(TOPICS), ids=str)
def test_rows_of_a_topic_do_not_overlap(topic: str) -> None:
    releases = ["0.17.0", "0.19.3", "0.19.4", "0.21.0", "0.22.0", "0.27.0", "0.28.0", "1.7.0", "1.8.0", "1.14.0",
                "1.15.0", "2.6.6", "2.13.0", "4.37.2", "4.38.0", "4.43.0", "4.55.4", "4.56.0", "4.57.6", "5.0.0",
                "5.9.0", "5.10.1", "5.16.0", "5.17.0", "5.22.2", "5.23.0", "5.24.0", "5.25.0"]
    for release in releases:
        assert sum(r.admits(release) for r in TOPICS[topic].rows) <= 1, release


def test_entries_and_tests_named_by_the_table_exist() -> None:
    entries = set(load_library().entries) | set(RULES) | {"checkpoint.deepspeed-config"}
    tests = {n.name for n in ast.walk(ast.parse((HERE / "test_matrix.py").read_text())) if isinstance(n, ast.FunctionDef)}
    for t in TOPICS.values():
        assert set(t.entries) <= entries, t.id
        if t.tested:
            path, _, name = t.tested.partition("::")
            assert path == "tests/stack/test_matrix.py" and name in tests, t.tested


def test_answers_name_the_version_they_assumed() -> None:
    answer = facts.answer("transformers.default-kwargs", {"transformers": "4.57.6"})
    assert answer.value is True and answer.assumed == "transformers 4.57.6"
    assert facts.answer("transformers.default-kwargs", {"transformers": "5.24.0"}).value is False
    unknown = facts.answer("transformers.default-kwargs", {})
    assert not unknown.known and unknown.assumed == "transformers: not found"
    assert unknown.topic.versions_where_not(False) == "transformers <5.0.0"
    assert not facts.answer("torch.missing-use-reentrant", {"torch": "2.16.0"}).known  # never read: unknown


def _site(root: Path, **versions: str) -> Path:
    site = root / "lib" / "python3.11" / "site-packages"
    for name, version in versions.items():
        (site / f"{name}-{version}.dist-info").mkdir(parents=True)
        (site / f"{name}-{version}.dist-info" / "METADATA").write_text(f"Name: {name}\nVersion: {version}\n")
    site.mkdir(parents=True, exist_ok=True)
    return site


def test_environment_precedence_and_pth(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    monkeypatch.delenv("CONDA_PREFIX", raising=False)
    base = _site(tmp_path / "base", torch="2.13.0", transformers="5.24.0")
    top = _site(tmp_path / "matrix", transformers="4.57.6")
    (top / "base.pth").write_text(f"# the test venv\nimport os\n{base}\n")
    env = find_environment(str(tmp_path / "matrix" / "bin" / "python"), ())
    assert env.versions == {"transformers": "4.57.6", "torch": "2.13.0"} and env.origin == "--python"
    project = tmp_path / "project" / "src"
    project.mkdir(parents=True)
    _site(tmp_path / "project" / ".venv", transformers="5.23.0")
    near = find_environment("", (str(project), str(project.parent)))
    assert near.version("transformers") == "5.23.0" and near.origin == "a .venv near the file"
    monkeypatch.setenv("VIRTUAL_ENV", str(tmp_path / "base"))
    assert find_environment("", (str(project),)).version("transformers") == "5.24.0"
    with pytest.raises(NoEnvironmentError):
        find_environment(str(tmp_path / "nothing" / "bin" / "python"), ())
