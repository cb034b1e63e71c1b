"""What to check: the options of one `rootrank check` run, shared by the CLI, the editor and the API."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class CheckOptions:
    """Selection by entry id or prefix (`checkpoint`, `checkpoint.reentrant`), as in ruff and torchfix."""

    select: tuple[str, ...] = ()  # empty: every rule
    ignore: tuple[str, ...] = ()
    noqa: bool = True  # honour `# noqa` / `# noqa: <id>` comments

    def enabled(self, rule_id: str) -> bool:
        if self.select and not any(matches(rule_id, s) for s in self.select):
            return False
        return not any(matches(rule_id, s) for s in self.ignore)


def matches(rule_id: str, selector: str) -> bool:
    """`checkpoint` selects `checkpoint.*`; `checkpoint.reentrant` selects `checkpoint.reentrant-*`."""
    selector = selector.strip()
    if not selector:
        return False
    if selector.upper() == "ALL" or rule_id == selector:
        return True
    return rule_id.startswith(selector) and rule_id[len(selector)] in ".-"
