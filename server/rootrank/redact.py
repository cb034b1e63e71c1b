"""Redaction of credentials that logs often carry (tokens in env dumps, URLs, headers).

Reports and "Copy as Markdown" go into issues and chats; tokens must not. `raw=True` on a renderer
skips redaction when the user explicitly asks for the original text.
"""

from __future__ import annotations

import re
from typing import NamedTuple


class _Rule(NamedTuple):
    """A credential's pattern, its replacement, and literals one of which every match holds: a text with
    none of them is not searched (a pattern that opens with `\b` gets no fast literal scan from the regex
    engine, and a report redacts hundreds of timeline lines: seven scans each cost 13 ms, a tenth of the
    diagnosis of a small log). `folded`: the literals are looked for in the lower-cased text."""

    literals: tuple[str, ...]
    pattern: re.Pattern[str]
    replacement: str
    folded: bool = False


_RULES: tuple[_Rule, ...] = (
    _Rule(("hf_",), re.compile(r"\bhf_[A-Za-z0-9]{20,}"), "hf_***"),
    _Rule(("AKIA", "ASIA"), re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b"), "AKIA***"),
    # Every name this rule knows holds one of these four words.
    _Rule(("KEY", "SECRET", "PASSWORD", "TOKEN"),
          re.compile(r"\b(WANDB_API_KEY|HF_TOKEN|HUGGING_FACE_HUB_TOKEN|HUGGINGFACE_TOKEN|OPENAI_API_KEY|"
                     r"AWS_SECRET_ACCESS_KEY|AWS_SESSION_TOKEN|GITHUB_TOKEN|NGC_API_KEY|"
                     r"[A-Z_]{0,40}(?:SECRET|PASSWORD|TOKEN)[A-Z_]{0,40})([ \t]{0,8}[=:][ \t]{0,8})(['\"]?)"
                     r"[^\s'\"]{4,}\3"), r"\1\2\3***\3"),
    _Rule(("bearer",), re.compile(r"(?i)\b(authorization:\s*bearer|bearer)\s+[A-Za-z0-9._~+/=-]{12,}"), r"\1 ***",
          folded=True),
    _Rule(("gh",), re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}"), "gh*_***"),
    _Rule(("sk-",), re.compile(r"\bsk-[A-Za-z0-9_-]{20,}"), "sk-***"),
    _Rule(("://",), re.compile(r"(?<=://)[^/\s:@]{1,64}:[^/\s@]{1,128}@"), "***:***@"),
)


def redact(text: str) -> str:
    for rule in _RULES:
        searched = text.lower() if rule.folded else text
        if any(literal in searched for literal in rule.literals):
            text = rule.pattern.sub(rule.replacement, text)
    return text
