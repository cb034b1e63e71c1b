"""#22 item 2: config fixes (YAML and JSON) placed with positions from the parser, and proven.

Regressions for the inputs that broke it (a setting in a list item, one that comes through a merge key,
a flow mapping, JSON keys of the same name in other objects, duplicate keys), then the property over
every config fixture and variants generated from it: every fix, applied alone, parses and removes its
finding; `--fix` twice changes nothing; the language server's fixes are the engine's.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from rootrank.check import check_source, fix_source
from rootrank.check.options import CheckOptions
from rootrank.check.source import Locator
from rootrank.model import Finding, Fix

REPO = Path(__file__).resolve().parents[2]
FIXTURES = sorted(p for p in (REPO / "tests" / "check").rglob("*")
                  if p.suffix in (".json", ".yaml", ".yml") and ".fixed." not in p.name)
REENTRANT = "checkpoint.use-reentrant-explicit"
CACHE = "checkpoint.hf-use-cache"


def parse(text: str, path: str) -> Any:
    return json.loads(text) if path.endswith(".json") else yaml.safe_load(text)


def apply(text: str, fix: Fix) -> str:
    locator = Locator(text)
    for edit in sorted(fix.edits, key=lambda e: (e.line, e.column), reverse=True):
        start, end = locator.offset(edit.line, edit.column), locator.offset(edit.end_line, edit.end_column)
        text = text[:start] + edit.text + text[end:]
    return text


def assert_fixes_are_proven(text: str, path: str) -> list[Finding]:
    findings = check_source(text, path)
    before = Counter(f.rule for f in findings)
    for finding in findings:
        for fix in finding.fixes:
            fixed = apply(text, fix)
            parse(fixed, path)  # raises if the fix broke the file
            after = Counter(f.rule for f in check_source(fixed, path))
            assert after[finding.rule] < before[finding.rule], (path, fix, fixed)
    once, _ = fix_source(text, path, unsafe=True)
    parse(once, path)
    assert fix_source(once, path, unsafe=True)[0] == once, (path, once)
    safe, _ = fix_source(text, path)
    assert fix_source(safe, path)[0] == safe
    return findings


# ---------------------------------------------------------------------- the regressions


def test_a_setting_in_a_list_item_is_fixed_in_its_item() -> None:
    text = "runs:\n- output_dir: a\n  gradient_checkpointing: true\n- gradient_checkpointing: true\n  output_dir: b\n"
    findings = assert_fixes_are_proven(text, "runs.yaml")
    assert [f.line for f in findings if f.rule == REENTRANT] == [3, 4] and all(f.fixes for f in findings)
    fixed = parse(fix_source(text, "runs.yaml", unsafe=True)[0], "runs.yaml")
    assert [run["gradient_checkpointing_kwargs"] for run in fixed["runs"]] == [{"use_reentrant": False}] * 2


def test_a_setting_through_a_merge_key_is_never_edited_at_line_one() -> None:
    text = ("defaults: &defaults\n  gradient_checkpointing: true\n  use_cache: true\n"
            "train:\n  <<: *defaults\n  output_dir: out\n")
    findings = assert_fixes_are_proven(text, "merge.yaml")
    assert findings and all(f.line in (2, 3) for f in findings)  # where the key is written
    for finding in findings:
        for fix in finding.fixes:
            assert all(e.line in (2, 3) for e in fix.edits)  # in the anchor's own mapping, never line 1
    fixed = parse(fix_source(text, "merge.yaml", unsafe=True)[0], "merge.yaml")
    assert fixed["train"]["use_cache"] is False and fixed["train"]["gradient_checkpointing_kwargs"]
    # A merged mapping that overrides the key in its own text is edited there.
    own = text + "  use_cache: true\n"
    fixed = parse(fix_source(own, "merge.yaml")[0], "merge.yaml")
    assert fixed["train"]["use_cache"] is False


def test_a_flow_mapping_is_fixed_inside_its_braces() -> None:
    text = "trainer: {output_dir: o, gradient_checkpointing: true, use_cache: true}  # comment\nseed: 3\n"
    findings = assert_fixes_are_proven(text, "flow.yaml")
    assert {f.rule for f in findings if f.fixes} == {REENTRANT, CACHE}
    fixed = fix_source(text, "flow.yaml", unsafe=True)[0]
    assert parse(fixed, "flow.yaml")["trainer"]["gradient_checkpointing_kwargs"] == {"use_reentrant": False}
    assert fixed.endswith("}  # comment\nseed: 3\n")


def test_json_keys_of_the_same_name_in_other_objects() -> None:
    data = {"eval": {"output_dir": "e", "gradient_checkpointing": False, "use_cache": True},
            "train": {"output_dir": "t", "gradient_checkpointing": True, "use_cache": True}}
    for text in (json.dumps(data), json.dumps(data, indent=2), json.dumps(data, indent="\t")):
        assert_fixes_are_proven(text, "args.json")
        fixed = text
        for _ in range(20):  # every run used to add the same key again, to the first object
            fixed = fix_source(fixed, "args.json", unsafe=True)[0]
        result = json.loads(fixed)
        assert result["eval"] == data["eval"]
        assert result["train"]["gradient_checkpointing_kwargs"] == {"use_reentrant": False}
        assert result["train"]["use_cache"] is False
        assert fixed.count("gradient_checkpointing_kwargs") == 1


def test_json_duplicate_keys_are_fixed_where_the_value_in_effect_is() -> None:
    text = '{"output_dir": "o", "use_cache": false, "gradient_checkpointing": true, "use_cache": true}'
    assert json.loads(text)["use_cache"] is True
    assert_fixes_are_proven(text, "dup.json")
    assert json.loads(fix_source(text, "dup.json")[0])["use_cache"] is False


def test_no_fix_where_the_position_is_unknown() -> None:
    """A key built by a YAML tag or a complex key has no place to edit: the finding stays, without a fix
    that would land elsewhere."""
    text = "? gradient_checkpointing\n: true\noutput_dir: o\n"
    for finding in assert_fixes_are_proven(text, "odd.yaml"):
        for fix in finding.fixes:
            assert parse(apply(text, fix), "odd.yaml")


# ---------------------------------------------------------------------- the property


def variants(path: Path) -> Iterator[tuple[str, str]]:
    """The fixture as written and generated re-spellings of the same settings."""
    text = path.read_text(encoding="utf-8")
    name = path.name
    yield name, text
    try:
        data = parse(text, name)
    except (ValueError, yaml.YAMLError):
        return
    if name.endswith(".json"):
        yield name, json.dumps(data)
        yield name, json.dumps(data, indent=4)
        yield name, json.dumps({"other": _falsified(data), "train": data}, indent=1)
        yield name, text.replace("\n", "\r\n")
        return
    yield name, yaml.safe_dump(data, default_flow_style=True, sort_keys=False)
    yield name, yaml.safe_dump([data, data], sort_keys=False)  # settings in list items
    yield name, yaml.safe_dump({"a": {"b": data}}, sort_keys=False, indent=4)
    if isinstance(data, dict) and data:
        body = yaml.safe_dump(data, sort_keys=False)
        merged = "base: &base\n" + "".join(f"  {line}\n" for line in body.splitlines()) + "train:\n  <<: *base\n  seed: 1\n"
        yield name, merged
        yield name, "- " + "\n  ".join(text.rstrip("\n").splitlines()) + "\n"  # the file as one list item
    yield name, text.replace("\n", "\r\n")


def _falsified(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: (False if v is True else _falsified(v)) for k, v in data.items()}
    return data


CASES = [(f"{path.parent.name}/{path.name}#{i}", name, text)
         for path in FIXTURES for i, (name, text) in enumerate(variants(path))]


@pytest.mark.parametrize(("case", "name", "text"), CASES, ids=[c[0] for c in CASES])
def test_every_fix_of_every_config_variant_is_proven(case: str, name: str, text: str) -> None:
    assert_fixes_are_proven(text, name)


def test_the_fixture_variants_reach_the_fixes() -> None:
    """The property is not vacuous: the variants carry fixes, in list items, merges and flow mappings."""
    fixable = [case for case, name, text in CASES if any(f.fixes for f in check_source(text, name))]
    assert len(fixable) >= 10
    assert any("- " in text and any(f.fixes for f in check_source(text, name)) for _, name, text in CASES
               if name.endswith((".yaml", ".yml")))


def test_the_language_server_offers_the_engines_fixes() -> None:
    """The quick fix and fix-all come from the same proven engine fixes as `--fix`."""
    from lsprotocol import types

    from rootrank.lsp.convert import range_from_json
    from rootrank.lsp.diagnostics import compute
    from rootrank.lsp.engine import versions_for
    from rootrank.lsp.settings import Settings

    text = "runs:\n- gradient_checkpointing: true\n  output_dir: a\n  use_cache: true\n"
    findings, diagnostics = compute(text, "runs.yaml", 1, Settings(), "utf-16", [])
    # The server reads the versions installed where it runs; the engine is asked with the same ones.
    engine = check_source(text, "runs.yaml", CheckOptions(versions=versions_for("", None, ())))
    assert [[e.text for fix in f.fixes for e in fix.edits] for f in findings] == \
        [[e.text for fix in f.fixes for e in fix.edits] for f in engine]
    edits = [types.TextEdit(range_from_json(e["range"]), e["newText"])
             for d in diagnostics for fix in (d.data or {}).get("fixes", ())[:1] for e in fix["edits"]]
    lines = text.split("\n")
    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        start = sum(len(x) + 1 for x in lines[: edit.range.start.line]) + edit.range.start.character
        end = sum(len(x) + 1 for x in lines[: edit.range.end.line]) + edit.range.end.character
        text = text[:start] + edit.new_text + text[end:]
        lines = text.split("\n")
    fixed = yaml.safe_load(text)
    assert fixed["runs"][0]["use_cache"] is False
    # Where the installed transformers already runs non-reentrant (>= 5.0) the kwargs finding is not there.
    if any(f.rule == "checkpoint.use-reentrant-explicit" for f in engine):
        assert fixed["runs"][0]["gradient_checkpointing_kwargs"]
