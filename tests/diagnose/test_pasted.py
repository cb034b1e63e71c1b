"""Messages as people paste them: every entry's examples, decorated or cut short, still match it.

Property tests over the whole library (every example of every entry), through the same call the
pipeline makes for each line (`match_pasted`): each decoration of the issue threads and chats
(`> ` quotes, emphasis, backticks, bullets, pytest's `E   `, `ERROR:root:`), and each cut of the
line after its pattern's literal, for every pattern a cut-line regex can be derived for (unless,
cut there, the line is what another specific entry matches as printed).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from rootrank.diagnose import Pipeline, diagnose_text, match_pasted
from rootrank.diagnose.formats.paste import undecorate
from rootrank.diagnose.truncated import may_be_cut, truncated_source
from rootrank.library import load_library

LIBRARY = load_library()
PIPELINE = Pipeline(LIBRARY)
DECORATIONS: dict[str, Callable[[str], str]] = {
    "quote": lambda s: "> " + s,
    "nested-quote": lambda s: "> > " + s,
    "bold": lambda s: "**" + s.strip() + "**",
    "code": lambda s: "`" + s.strip() + "`",
    "pytest": lambda s: "E       " + s,
    "bullet": lambda s: "- " + s,
    "star-bullet": lambda s: "* " + s,
    "logging-default": lambda s: "ERROR:root:" + s.strip(),
}


def _entries(text: str) -> set[str]:
    return {p.entry_id for p, _ in match_pasted(PIPELINE.matcher.match, text, PIPELINE.match_cut, PIPELINE.loose)}


def _specific_as_printed(text: str) -> set[str]:
    """Entries other than loose ones that the line matches without any cut reading."""
    return {p.entry_id for p, _ in PIPELINE.matcher.match(undecorate(text))} - PIPELINE.loose


def _examples() -> list[object]:
    out = []
    for entry in LIBRARY:
        for i, example in enumerate(entry.examples_match):
            if entry.id in {p.entry_id for p, _ in PIPELINE.matcher.match(example.text)}:
                out.append(pytest.param(entry.id, example.text, id=f"{entry.id}[{i}]"))
    return out


EXAMPLES = _examples()


def test_every_entry_has_examples_under_test() -> None:
    with_patterns = {e.id for e in LIBRARY if any(not p.follows for p in e.patterns)}
    assert with_patterns <= {p.values[0] for p in EXAMPLES}  # type: ignore[attr-defined]


@pytest.mark.parametrize(("entry_id", "text"), EXAMPLES)
def test_decorated_example_matches_its_entry(entry_id: str, text: str) -> None:
    for name, decorate in DECORATIONS.items():
        assert entry_id in _entries(decorate(text)), f"{name}: {decorate(text)!r}"


@pytest.mark.parametrize(("entry_id", "text"), EXAMPLES)
def test_example_cut_after_its_literal_matches_its_entry(entry_id: str, text: str) -> None:
    entry = LIBRARY.entries[entry_id]
    for pattern in entry.patterns:
        m = None if pattern.follows or pattern.ignore_case else pattern.regex.search(text)
        if m is None or truncated_source(pattern.pattern, pattern.literal) is None:
            continue  # no cut regex when the literal is not spelled out at the pattern's top level
        start = text.find(pattern.literal, m.start())
        if start < 0:
            continue
        for cut in range(start + len(pattern.literal), m.end() + 1):
            piece = text[:cut]
            if piece.rstrip() != piece or (cut < m.end() and not may_be_cut(piece)):
                continue  # a cut leaves no trailing blank; one that ends like a whole line reads as one
            if _specific_as_printed(piece) - {entry_id}:
                continue  # cut there, the line reads as another specific failure: it is named that
            assert entry_id in _entries(piece), f"cut at {cut}: {piece!r}"
        return


def test_no_match_examples_stay_unmatched_when_read_as_cut() -> None:
    wrong = []
    for entry in LIBRARY:
        for text in entry.examples_no_match:
            if entry.id in _entries(text) and entry.id not in {p.entry_id for p, _ in PIPELINE.matcher.match(text)}:
                wrong.append((entry.id, text))
    assert not wrong


def test_cut_oom_message_is_diagnosed() -> None:
    text = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 100.00 MiB (GPU 0; 12.00 GiB total")
    d = diagnose_text(text)
    assert d.root_cause is not None and d.root_cause.rule == "memory.cuda-oom"
    d = diagnose_text("**torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a tot**")
    assert d.root_cause is not None and d.root_cause.rule == "memory.cuda-oom"


def test_undecorate_keeps_plain_lines_as_they_are() -> None:
    for text in ("RuntimeError: boom", "[rank1]: ValueError: x", "E1202 03:24:25.708000 17909 api.py:1002] failed",
                 "  File \"/home/user/train.py\", line 3, in <module>", "- 0/0: GLOBAL_STATE changed: grad_mode"):
        plain = undecorate(text)
        assert plain is text or text.startswith("- ")


def test_windows_frame_paths_read_as_posix() -> None:
    line = '  File "C:\\Users\\me\\venv\\Lib\\site-packages\\torch\\_inductor\\codecache.py", line 2, in load'
    assert "torch/_inductor/codecache.py" in undecorate(line)
