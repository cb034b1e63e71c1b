"""Ranks named inside a message by the code that printed it, for lines without a rank prefix.

Only forms that name the printing process count: `[Rank 3]` (c10d), `[PG 0 (default_pg) Rank 3]`,
`GLOBAL_RANK: 3` and `[rank: 3] ` (Lightning), `with rank id: 3` (InternLM), `[RANK 3]`, `Rank 3: ` at the start (Megatron),
`[PID:123] [RANK:3] ` (axolotl), `INFO [root, rank=3] ` (OLMo).
A sub-group rank (`[PG ID 4 PG GUID 10 Rank 1]`) is not the global rank and is ignored, and so is a
`[Rank N]` in the same message (c10d prints the group's own rank there too); so are lines
that name several ranks ("Rank 0 is running collective ..., but Rank 1 ...").
"""

from __future__ import annotations

import re

_FORMS = (
    re.compile(r"\[PG (?:ID )?0 (?:PG GUID 0)?\s?\(default_pg\) Rank (?P<rank>\d{1,6})\]"),
    re.compile(r"\[PG (?:ID )?0 PG GUID 0 Rank (?P<rank>\d{1,6})\]"),
    re.compile(r"\[PG 0 Rank (?P<rank>\d{1,6})\]"),
    re.compile(r"\[Rank (?P<rank>\d{1,6})\]"),
    re.compile(r"\[RANK (?P<rank>\d{1,6})\]"),
    re.compile(r"GLOBAL_RANK: (?P<rank>\d{1,6})"),
    re.compile(r"with rank id: (?P<rank>\d{1,6})"),
    re.compile(r"^(?:AssertionError: )?Rank (?P<rank>\d{1,6}): "),
    re.compile(r"\brank (?P<rank>\d{1,6}) nranks \d"),
    # Lightning's rank_prefixed_message (and the RankedLogger of lightning-hydra-template) after a logging
    # format's own header: "[2024-03-01 10:00:00,123][src.train][INFO] - [rank: 1] Instantiating model".
    re.compile(r"(?:^|\s)\[rank: (?P<rank>\d{1,6})\] "),
    # axolotl's logging format: "[%(asctime)s] [%(levelname)s] [%(name)s.%(funcName)s:%(lineno)d]
    # [PID:%(process)d] [RANK:%(rank)d] %(message)s" (axolotl-ai-cloud/axolotl:src/axolotl/logging_config.py).
    re.compile(r"\[PID:\d{1,9}\] \[RANK:(?P<rank>\d{1,6})\] "),
    # OLMo's console format: "LEVEL [logger, rank=N] message" (allenai/OLMo: olmo/util.py's log record factory).
    re.compile(r"(?:^|\] )[A-Z]{4,8} \[[\w.]{1,80}, rank=(?P<rank>\d{1,6})\] "),
)
_MARKERS = ("Rank ", "RANK", "rank ", "rank id", "[rank: ", ", rank=")
# A process group other than the default one (`[PG 1 Rank 1]`, `[PG ID 4 PG GUID 10 Rank 1]`): c10d's
# `[Rank N]` in the same message is that group's rank_ too, not the global rank.
_SUB_GROUP = re.compile(r"\[PG (?:ID )?(?!0\b)\d{1,6}\b")


# What rank_span looks at, for shapes.digit_classes: the forms and the substrings it tests.
REGEXES = (*(form.pattern for form in _FORMS), _SUB_GROUP.pattern,
           *(re.escape(m) for m in (*_MARKERS, "Rank ", "running collective")))


def rank_in_message(text: str) -> int | None:
    span = rank_span(text)
    return None if span is None else int(text[span[0]: span[1]])


def rank_span(text: str) -> tuple[int, int] | None:
    """Where the rank the message names is, if it names one."""
    if not any(m in text for m in _MARKERS):
        return None
    if text.count("Rank ") > 1 and "running collective" in text:
        return None
    if "[PG " in text and _SUB_GROUP.search(text):
        return None
    for form in _FORMS:
        m = form.search(text)
        if m:
            return m.span("rank")
    return None
