"""Redaction of credentials that logs often carry (tokens in env dumps, URLs, headers).

Reports and "Copy as Markdown" go into issues and chats; tokens must not. `raw=True` on a renderer
skips redaction when the user explicitly asks for the original text.
"""

from __future__ import annotations

import re

_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\bhf_[A-Za-z0-9]{20,}"), "hf_***"),
    (re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b"), "AKIA***"),
    (re.compile(r"\b(WANDB_API_KEY|HF_TOKEN|HUGGING_FACE_HUB_TOKEN|HUGGINGFACE_TOKEN|OPENAI_API_KEY|"
                r"AWS_SECRET_ACCESS_KEY|AWS_SESSION_TOKEN|GITHUB_TOKEN|NGC_API_KEY|[A-Z_]{0,40}(?:SECRET|PASSWORD|TOKEN)"
                r"[A-Z_]{0,40})([ \t]{0,8}[=:][ \t]{0,8})(['\"]?)[^\s'\"]{4,}\3"), r"\1\2\3***\3"),
    (re.compile(r"(?i)\b(authorization:\s*bearer|bearer)\s+[A-Za-z0-9._~+/=-]{12,}"), r"\1 ***"),
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}"), "gh*_***"),
    (re.compile(r"\bsk-[A-Za-z0-9_-]{20,}"), "sk-***"),
    (re.compile(r"(?<=://)[^/\s:@]{1,64}:[^/\s@]{1,128}@"), "***:***@"),
)


def redact(text: str) -> str:
    for pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    return text
