"""An entry's documentation as Markdown with fixed sections: the single source for `rootrank explain`,
the editor hover and the generated pages under docs/rules/.

Sections, always in this order (optional ones only when the entry has them): What it means, When it
matters, Symptoms, Why it happens, What to do, Verify, In code (Example / Use instead / Fix safety),
Log messages, Examples, References, Related.
"""

from __future__ import annotations

from pathlib import Path

from rootrank.library import Entry, Library, load_library

SECTIONS = ("What it means", "Symptoms", "Why it happens", "What to do", "Verify", "References")


def _stack_label(when: dict[str, object]) -> str:
    parts = []
    stack = when.get("stack")
    if stack:
        parts.append("with " + (stack if isinstance(stack, str) else " or ".join(map(str, stack))))  # type: ignore[arg-type]
    if when.get("flag"):
        parts.append(f"when {when['flag']}")
    if when.get("field"):
        parts.append(f"when the log shows {when['field']}")
    return ", ".join(parts) or "variant"


def entry_markdown(entry: Entry) -> str:
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
        out.append("\n".join(f"- `{p.name}`: `{p.regex.pattern}` — from {p.source} ({p.versions})"
                             for p in entry.patterns))
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


def explain(entry_id: str, library: Library | None = None) -> str | None:
    entry = (library or load_library()).get(entry_id)
    return entry_markdown(entry) if entry else None


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
