"""An entry's documentation as Markdown with fixed sections: the single source for `rootrank explain`,
the editor hover and the generated pages under docs/rules/.

Sections, always in this order (optional ones only when the entry has them): What it means, When it
matters, Symptoms, Why it happens, What to do, Verify, In code (Example / Use instead / Fix safety),
Log messages, Versions, Examples, References, Related. The Versions section comes from the version-facts
table (rootrank.stack.facts), never from the entry's prose; given the installed versions, it marks the row
that applies, so the hover and `explain` say which version they describe.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rootrank.library import Entry, Library, load_library

if TYPE_CHECKING:
    from collections.abc import Mapping

SECTIONS = ("What it means", "Symptoms", "Why it happens", "What to do", "Verify", "References")


def _stack_label(when: dict[str, object]) -> str:
    parts = []
    stack = when.get("stack")
    if isinstance(stack, str):
        parts.append(f"with {stack}")
    elif isinstance(stack, list):
        parts.append("with " + " or ".join(str(s) for s in stack))
    if when.get("flag"):
        parts.append(f"when {when['flag']}")
    if when.get("field"):
        parts.append(f"when the log shows {when['field']}")
    return ", ".join(parts) or "variant"


def _pattern_versions(versions: str) -> str:
    """A pattern's `versions` may name a facts topic: then the ranges come from the table."""
    from rootrank.stack import facts

    topics = facts.load_topics()
    if versions in topics:
        t = topics[versions]
        return f"{t.library} " + " or ".join(r.versions.text for r in t.rows if r.value is not None)
    return versions


def versions_section(entry_id: str, installed: Mapping[str, str] | None = None) -> list[str]:
    """`## Versions`: what each library does in which version, for the topics that name this entry."""
    from rootrank.stack import facts

    topics = facts.topics_for_entry(entry_id)
    if not topics:
        return []
    lines = []
    for t in topics:
        version = (installed or {}).get(t.library)
        current = t.row_for(version)
        lines.append(f"- **{t.library}**: {t.meaning}")
        for row in t.rows:
            mark = f" ← installed: {t.library} {version}" if row is current else ""
            lines.append(f"  - `{t.library} {row.versions.text}`: {row.says} ({row.source}){mark}")
        if installed is not None and current is None:
            lines.append(f"  - installed: {t.library} {version or 'not found'}, outside the versions read")
    return ["## Versions", "\n".join(lines)]


def entry_markdown(entry: Entry, installed: Mapping[str, str] | None = None) -> str:
    out: list[str] = [f"# {entry.id}: {entry.title}",
                      f"*severity* **{entry.severity.value}** · *role* **{entry.role.value}** · "
                      f"*category* **{entry.category}**"]
    out += ["## What it means", entry.summary]
    if entry.when_it_matters:
        out += ["## When it matters", entry.when_it_matters]
    out.append("## Symptoms")
    out.append("\n".join(f"- **{s}** — {why}" for s, why in entry.symptoms))
    out.append("## Why it happens")
    out.append("\n".join(f"- {cause}" for cause in entry.root_causes))
    out += ["## What to do", entry.fix]
    for variant in entry.fix_variants:
        out += [f"**{_stack_label(dict(variant.when))[:1].upper() + _stack_label(dict(variant.when))[1:]}:**",
                variant.text]
    out += ["## Verify", f"```sh\n{entry.verify_command}\n```"]
    if entry.verify_success:
        out.append(f"Success looks like: {entry.verify_success}")
    if entry.check:
        out.append("## In code")
        if entry.check.get("message"):
            out.append(f"`rootrank check` reports: *{entry.check['message']}*")
        if entry.check.get("example"):
            out += ["### Example", f"```python\n{entry.check['example']}\n```"]
        if entry.check.get("use_instead"):
            out += ["### Use instead", f"```python\n{entry.check['use_instead']}\n```"]
        if entry.check.get("fix_safety"):
            out += ["### Fix safety", entry.check["fix_safety"]]
    if entry.patterns:
        out.append("## Log messages")
        out.append("\n".join(f"- `{p.name}`: `{p.regex.pattern}` — from {p.source} ({_pattern_versions(p.versions)})"
                             + (f". Alone, without another of these messages, it may also be {p.alone}" if p.alone else "")
                             + (f". A warning, not an error: {p.also_healthy}" if p.also_healthy else "")
                             + (f". An error, though printed as a warning: {p.warned_on_failure}"
                                if p.warned_on_failure else "")
                             for p in entry.patterns))
    out += versions_section(entry.id, installed)
    if entry.examples_match:
        out.append("## Examples")
        out.append("\n".join(f"- `{ex.text.strip()[:300]}`" + (f" — {ex.source}" if ex.source else "")
                             for ex in entry.examples_match[:8]))
    out.append("## References")
    out.append("\n".join(f"- {ref}" for ref in entry.references))
    if entry.affected:
        out += ["## Affected", ", ".join(entry.affected)]
    if entry.related:
        out += ["## Related", ", ".join(f"`{r}`" for r in entry.related)]
    return "\n\n".join(out).rstrip() + "\n"


def explain(entry_id: str, library: Library | None = None,
            installed: Mapping[str, str] | None = None) -> str | None:
    """The entry's page; with `installed` (package -> version) the Versions section marks what applies."""
    entry = (library or load_library()).get(entry_id)
    return entry_markdown(entry, installed) if entry else None


def docs_root() -> Path | None:
    """docs/rules in a checkout (absent from an installed wheel)."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        candidate = parent / "docs" / "rules"
        if (parent / "pyproject.toml").is_file():
            return candidate
    return None


def docs_path(entry_id: str) -> str | None:
    root = docs_root()
    if root is None:
        return None
    page = root / f"{entry_id}.md"
    return str(page) if page.is_file() else None


README_BEGIN = "<!-- rules-table:begin (generated by scripts/gen_docs.py; do not edit) -->"
README_END = "<!-- rules-table:end -->"


def rules_table(library: Library) -> str:
    rows = ["| id | title | severity | role | code check |", "|---|---|---|---|---|"]
    for entry in sorted(library.entries.values(), key=lambda e: e.id):
        rows.append(f"| [`{entry.id}`](docs/rules/{entry.id}.md) | {entry.title.replace('|', '/')} | "
                    f"{entry.severity.value} | {entry.role.value} | {'yes' if entry.check else ''} |")
    return "\n".join(rows)


def generated_files(repo: Path, library: Library | None = None) -> dict[Path, str]:
    """Every generated documentation file and its content: one page per entry, an index, the README table."""
    library = library or load_library()
    files: dict[Path, str] = {}
    for entry in library.entries.values():
        files[repo / "docs" / "rules" / f"{entry.id}.md"] = entry_markdown(entry)
    files[repo / "docs" / "rules" / "README.md"] = (
        "# Failure entries\n\nGenerated from `rules/` by `scripts/gen_docs.py`; one page per entry.\n\n"
        + rules_table(library).replace("](docs/rules/", "](") + "\n")
    readme = repo / "README.md"
    text = readme.read_text(encoding="utf-8") if readme.is_file() else ""
    if README_BEGIN in text and README_END in text:
        head, rest = text.split(README_BEGIN, 1)
        _, tail = rest.split(README_END, 1)
        files[readme] = f"{head}{README_BEGIN}\n{rules_table(library)}\n{README_END}{tail}"
    return files
