"""Validating one parsed entry against docs/entry-format.md: every field's type and shape, ids,
stacks, and each log pattern (it compiles, cannot backtrack catastrophically, and every match holds its
prefilter literal). Every problem is collected, not just the first."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rootrank.library.records import Entry, Example, FixVariant, LoadProblem, LogPattern
from rootrank.model import Role, Severity
from rootrank.regex_safety import backtracking_risk, literal_is_required

ID_PATTERN = re.compile(r"^[a-z][a-z0-9]*\.[a-z0-9]+(?:-[a-z0-9]+)*$")
STACKS = frozenset(
    {"peft", "deepspeed", "fsdp", "transformers", "accelerate", "lightning", "megatron", "ddp", "compile", "ray",
     "slurm", "trl", "torchrun", "nccl", "gloo", "xformers"}
)


class EntryValidator:
    """Validates one parsed entry, collecting every problem rather than stopping at the first."""

    def __init__(self, path: Path, data: Any, trusted: bool = False) -> None:
        self.path = path
        self.data = data
        self.trusted = trusted  # the same content passed every check before (see LibraryCache)
        self.problems: list[LoadProblem] = []

    def fail(self, field_name: str, problem: str) -> None:
        self.problems.append(LoadProblem(self.path, field_name, problem))

    def text(self, key: str, required: bool = True) -> str:
        value = self.data.get(key)
        if value is None:
            if required:
                self.fail(key, "missing")
            return ""
        if not isinstance(value, str) or (required and not value.strip()):
            self.fail(key, "must be a non-empty string")
            return ""
        return value.strip()

    def str_list(self, key: str, required: bool = False) -> tuple[str, ...]:
        value = self.data.get(key)
        if value is None:
            if required:
                self.fail(key, "missing")
            return ()
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.fail(key, "must be a list of strings")
            return ()
        return tuple(v.strip() for v in value)

    def build(self) -> Entry | None:
        if not isinstance(self.data, dict):
            self.fail("<file>", "top level must be a mapping")
            return None
        entry_id = self.text("id")
        if entry_id and not ID_PATTERN.match(entry_id):
            self.fail("id", f"{entry_id!r} is not '<category>.<kebab-name>'")
        category = self.text("category")
        if entry_id and category and not entry_id.startswith(category + "."):
            self.fail("category", f"{category!r} is not the prefix of id {entry_id!r}")
        severity = self.enum("severity", Severity)
        role = self.enum("role", Role)
        priority = self.data.get("priority", 50)
        if not isinstance(priority, int) or isinstance(priority, bool):
            self.fail("priority", "must be an integer")
            priority = 50
        entry = Entry(
            id=entry_id,
            title=self.text("title"),
            category=category,
            severity=severity or Severity.ERROR,
            role=role or Role.CAUSE,
            summary=self.text("summary"),
            when_it_matters=self.text("when_it_matters", required=False),
            symptoms=self.symptoms(),
            root_causes=self.str_list("root_causes", required=True),
            fix="",
            fix_variants=(),
            verify_command="",
            verify_success="",
            references=self.str_list("references", required=True),
            patterns=self.patterns(entry_id),
            path=self.path,
            priority=priority,
            affected=self.str_list("affected"),
            related=self.str_list("related"),
            check=self.check_section(),
        )
        fix, variants = self.fix()
        verify_command, verify_success = self.verify()
        matches, no_matches = self.examples(entry)
        if not entry.references:
            self.fail("references", "at least one reference is required")
        if self.problems:
            return None
        return _replace(entry, fix=fix, fix_variants=variants, verify_command=verify_command,
                        verify_success=verify_success, examples_match=matches, examples_no_match=no_matches)

    def enum(self, key: str, kind: type[Severity] | type[Role]) -> Any:
        value = self.data.get(key)
        try:
            return kind(value)
        except ValueError:
            allowed = " | ".join(m.value for m in kind)
            self.fail(key, f"{value!r} is not one of {allowed}")
            return None

    def symptoms(self) -> tuple[tuple[str, str], ...]:
        value = self.data.get("symptoms")
        if not isinstance(value, list) or not value:
            self.fail("symptoms", "must be a non-empty list of {symptom, why}")
            return ()
        out = []
        for i, item in enumerate(value):
            if not isinstance(item, dict) or not isinstance(item.get("symptom"), str) \
                    or not isinstance(item.get("why"), str):
                self.fail(f"symptoms[{i}]", "must be a mapping with string 'symptom' and 'why'")
                continue
            out.append((item["symptom"].strip(), item["why"].strip()))
        return tuple(out)

    def fix(self) -> tuple[str, tuple[FixVariant, ...]]:
        value = self.data.get("fix")
        if isinstance(value, str):
            return value.strip(), ()
        if not isinstance(value, dict) or not isinstance(value.get("default"), str):
            self.fail("fix", "must be a string or a mapping with a 'default' string")
            return "", ()
        variants = []
        raw_variants = value.get("variants") or []
        if not isinstance(raw_variants, list):
            self.fail("fix.variants", "must be a list of {when, text}")
            raw_variants = []
        for i, item in enumerate(raw_variants):
            variant = self.fix_variant(f"fix.variants[{i}]", item)
            if variant is not None:
                variants.append(variant)
        return value["default"].strip(), tuple(variants)

    def fix_variant(self, where: str, item: Any) -> FixVariant | None:
        if not isinstance(item, dict) or not isinstance(item.get("when"), dict) \
                or not isinstance(item.get("text"), str):
            self.fail(where, "must be a mapping with 'when' (mapping) and 'text' (string)")
            return None
        unknown = {str(k) for k in item["when"]} - {"stack", "field", "flag"}
        if unknown:
            self.fail(f"{where}.when", f"unknown condition(s) {sorted(unknown)}")
        stacks = item["when"].get("stack")
        stack_list = [stacks] if isinstance(stacks, str) else stacks if isinstance(stacks, list) else None
        if stacks is not None and stack_list is None:
            self.fail(f"{where}.when.stack", "must be a stack name or a list of them")
        for stack in stack_list or []:
            if not isinstance(stack, str) or stack not in STACKS:
                self.fail(f"{where}.when.stack", f"unknown stack {stack!r}")
        return FixVariant(item["when"], item["text"].strip())

    def verify(self) -> tuple[str, str]:
        value = self.data.get("verify")
        if isinstance(value, str) and value.strip():
            return value.strip(), ""
        if not isinstance(value, dict) or not isinstance(value.get("command"), str):
            self.fail("verify", "must be a mapping with 'command' and 'success'")
            return "", ""
        success = value.get("success", "")
        if not isinstance(success, str):
            self.fail("verify.success", "must be a string")
            success = ""
        return value["command"].strip(), success.strip()

    def patterns(self, entry_id: str) -> tuple[LogPattern, ...]:
        value = self.data.get("log")
        if value is None:
            return ()
        if not isinstance(value, list):
            self.fail("log", "must be a list of patterns")
            return ()
        out: list[LogPattern] = []
        names: set[str] = set()
        for i, item in enumerate(value):
            pattern = self.pattern(f"log[{i}]", item, entry_id)
            if pattern is None:
                continue
            if pattern.name in names:
                self.fail(f"log[{i}].name", f"duplicate pattern name {pattern.name!r}")
            names.add(pattern.name)
            out.append(pattern)
        for i, pattern in enumerate(out):
            unknown = sorted(set(pattern.after) - {p.name for p in out if not p.after})
            if unknown:
                self.fail(f"log[{i}].after", f"names no pattern of this entry without `after`: {unknown}")
        return tuple(out)

    def pattern(self, where: str, item: Any, entry_id: str) -> LogPattern | None:
        """One `log:` item, or None when it cannot be used."""
        if not isinstance(item, dict):
            self.fail(where, "must be a mapping")
            return None
        required = {key: item.get(key) for key in ("name", "regex", "literal", "source", "versions")}
        for key, val in required.items():
            if not isinstance(val, str) or not val:
                self.fail(f"{where}.{key}", "missing or not a string")
        if not all(isinstance(v, str) and v for v in required.values()):
            return None
        name, regex_text, literal = str(item["name"]), str(item["regex"]), str(item["literal"])
        ignore_case = bool(item.get("ignore_case", False))
        # Counted in UTF-8 bytes, as the prefilter looks for it: three CJK characters are nine bytes.
        if len(literal.encode("utf-8")) < 4:
            self.fail(f"{where}.literal", "must be at least 4 bytes (in UTF-8) so the prefilter stays selective")
        if not self.trusted and not self.regex_is_usable(where, regex_text, literal, ignore_case):
            return None
        rank_is = item.get("rank_is", "global")
        if rank_is not in ("global", "peer"):
            self.fail(f"{where}.rank_is", "must be 'global' or 'peer'")
        follows = item.get("follows", False)
        if not isinstance(follows, bool):
            self.fail(f"{where}.follows", "must be true or false")
            follows = False
        after = item.get("after", [])
        if not isinstance(after, list) or not all(isinstance(a, str) and a for a in after):
            self.fail(f"{where}.after", "must be a list of pattern names")
            after = []
        if after and (follows or ignore_case):
            # The pattern's lines are searched for by its literal's exact bytes, outside the prefilter.
            self.fail(f"{where}.after", "cannot be combined with `follows` or `ignore_case`")
        alone = item.get("alone", "")
        if not isinstance(alone, str):
            self.fail(f"{where}.alone", "must be a string (what else prints this message)")
            alone = ""
        also_healthy = item.get("also_healthy", "")
        if not isinstance(also_healthy, str):
            self.fail(f"{where}.also_healthy", "must be a string (when a run that finishes prints this message)")
            also_healthy = ""
        warned_on_failure = item.get("warned_on_failure", "")
        if not isinstance(warned_on_failure, str):
            self.fail(f"{where}.warned_on_failure", "must be a string (why its warning is printed only on failure)")
            warned_on_failure = ""
        return LogPattern(entry_id, name, regex_text, literal, ignore_case, str(item["source"]),
                          str(item["versions"]), str(rank_is), follows, tuple(after), alone.strip(),
                          also_healthy.strip(), warned_on_failure.strip())

    def regex_is_usable(self, where: str, regex_text: str, literal: str, ignore_case: bool) -> bool:
        """It compiles, cannot backtrack catastrophically, and every match holds the literal."""
        try:
            re.compile(regex_text, re.IGNORECASE if ignore_case else 0)
        except re.error as exc:
            self.fail(f"{where}.regex", f"does not compile: {exc}")
            return False
        risk = backtracking_risk(regex_text)
        if risk:
            self.fail(f"{where}.regex", f"may backtrack catastrophically: {risk}")
            return False
        if not literal_is_required(regex_text, literal, ignore_case):
            # The prefilter only hands over lines holding the literal: a match without it is lost.
            self.fail(f"{where}.literal", f"{literal!r} is not in every match of the regex")
            return False
        return True

    def examples(self, entry: Entry) -> tuple[tuple[Example, ...], tuple[str, ...]]:
        value = self.data.get("examples")
        if value is None:
            if entry.patterns:
                self.fail("examples", "an entry with log patterns needs examples.match")
            return (), ()
        if not isinstance(value, dict):
            self.fail("examples", "must be a mapping with 'match' and 'no_match'")
            return (), ()
        matches: list[Example] = []
        raw_matches = value.get("match") or []
        if not isinstance(raw_matches, list):
            self.fail("examples.match", "must be a list")
            raw_matches = []
        for i, item in enumerate(raw_matches):
            example = self.example(f"examples.match[{i}]", item)
            if example is not None:
                matches.append(example)
        no_match = value.get("no_match") or []
        if not isinstance(no_match, list) or not all(isinstance(v, str) for v in no_match):
            self.fail("examples.no_match", "must be a list of strings")
            no_match = []
        if entry.patterns and not matches:
            self.fail("examples.match", "an entry with log patterns needs at least one real example")
        return tuple(matches), tuple(no_match)

    def example(self, where: str, item: Any) -> Example | None:
        if isinstance(item, str):
            return Example(item)
        if not isinstance(item, dict) or not isinstance(item.get("text"), str):
            self.fail(where, "must be a string or a mapping with 'text'")
            return None
        fields = item.get("fields") or {}
        if not isinstance(fields, dict):
            self.fail(f"{where}.fields", "must be a mapping")
            fields = {}
        return Example(item["text"], str(item.get("source", "")), {str(k): str(v) for k, v in fields.items()})

    def check_section(self) -> Mapping[str, str]:
        value = self.data.get("check")
        if value is None:
            return {}
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            self.fail("check", "must be a mapping of strings")
            return {}
        return {str(k): v.strip() for k, v in value.items()}


def _replace(entry: Entry, **changes: Any) -> Entry:
    return dataclasses.replace(entry, **changes)
