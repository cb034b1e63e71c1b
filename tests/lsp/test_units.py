"""Unit tables for the server's pure parts: positions, noqa edits, settings, the call reader, environments."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from lsprotocol import types

from rootrank.check.calls import read_file
from rootrank.environment import find_environment
from rootrank.lsp.convert import Lines, finding_to_diagnostic, split_lines
from rootrank.lsp.noqa import noqa_edit
from rootrank.lsp.settings import Settings, has_settings, parse_settings
from rootrank.model import Applicability, Edit, Finding, Fix, Severity

UTF16, UTF8, UTF32 = (types.PositionEncodingKind.Utf16, types.PositionEncodingKind.Utf8,
                      types.PositionEncodingKind.Utf32)


@pytest.mark.parametrize(("text", "line", "column", "encoding", "expected"), [
    ("abc", 1, 1, UTF16, (0, 0)),
    ("abc", 1, 4, UTF16, (0, 3)),                 # an exclusive end after the last character
    ("é😀x", 1, 3, UTF16, (0, 3)),                # the emoji is two UTF-16 units
    ("é😀x", 1, 3, UTF8, (0, 6)),                 # é is 2 bytes, the emoji 4
    ("é😀x", 1, 3, UTF32, (0, 2)),
    ("a\r\nbc\rd\ne", 3, 2, UTF16, (2, 1)),       # \r\n, \r and \n all end lines
    ("a\x0cb\nc", 1, 3, UTF16, (0, 2)),           # a form feed does not (unlike str.splitlines)
    ("ab\ncd", 9, 1, UTF16, (1, 2)),              # past the end: the end of the document
    ("ab", 1, 99, UTF16, (0, 2)),                 # clamped into the line
])
def test_positions(text: str, line: int, column: int, encoding: str, expected: tuple[int, int]):
    position = Lines(text, encoding).position(line, column)
    assert (position.line, position.character) == expected


@given(st.text(alphabet=st.sampled_from("ab é😀\t"), max_size=30), st.data())
def test_column_round_trip(text: str, data: st.DataObject):
    lines = Lines(text, UTF16)
    column = data.draw(st.integers(min_value=0, max_value=len(text)))
    assert lines.column(lines.position(1, column + 1)) == column


def test_split_lines_matches_lsp():
    assert split_lines("a\r\nb\rc\nd") == ["a", "b", "c", "d"]
    assert split_lines("a\n") == ["a", ""]


def _finding(line: str) -> Finding:
    at = line.index("checkpoint(") + 1
    end = line.index(")") + 1
    fix = Fix("Pass use_reentrant=False", Applicability.UNSAFE, (Edit(1, end, 1, end, ", use_reentrant=False"),))
    return Finding("checkpoint.use-reentrant-explicit", Severity.WARNING, "t.py", 1, at, 1, at + 10, "msg", (fix,))


def test_finding_to_diagnostic_carries_fixes_in_client_units():
    line = "y = checkpoint(f, '😀')"
    diagnostic = finding_to_diagnostic(_finding(line), Lines(line), version=7, severity="error",
                                       href="file:///docs/x.md")
    assert diagnostic.range.start == types.Position(0, 4)
    assert diagnostic.severity == types.DiagnosticSeverity.Error and diagnostic.code_description
    [fix] = diagnostic.data["fixes"]
    [edit] = fix["edits"]
    assert edit["range"]["start"] == {"line": 0, "character": len(line) - 1 + 1}  # emoji = 2 units
    assert fix["applicability"] == "unsafe" and diagnostic.data["version"] == 7


RULE = "checkpoint.x"


@pytest.mark.parametrize(("line", "expected"), [
    ("y = f(x)", "y = f(x)  # noqa: checkpoint.x"),
    ("y = f(x)   ", "y = f(x)  # noqa: checkpoint.x"),                      # trailing blanks replaced
    ("y = f(x)  # keep me", "y = f(x)  # keep me  # noqa: checkpoint.x"),
    ("y = f(x)  # noqa: E501", "y = f(x)  # noqa: E501, checkpoint.x"),
    ("y = f(x)  # noqa:E501,W291  # why", "y = f(x)  # noqa:E501,W291, checkpoint.x  # why"),
    ("y = f(x)  # noqa", None),                                              # already silences everything
    ("y = f(x)  # noqa: checkpoint.x", None),
    ("y = f(a, \\", None),                                                   # a comment would break the line
])
def test_noqa_edit(line: str, expected: str | None):
    lines = Lines(line)
    edit = noqa_edit(lines, 0, RULE)
    if expected is None:
        assert edit is None
        return
    assert edit is not None
    start, end = lines.column(edit.range.start), lines.column(edit.range.end)
    assert line[:start] + edit.new_text + line[end:] == expected


@pytest.mark.parametrize(("raw", "field", "value"), [
    ({"select": ["checkpoint"]}, "select", ("checkpoint",)),
    ({"rootrank": {"checkOn": "save"}}, "check_on", "save"),
    ({"rootrank": {"lintOn": "save"}}, "check_on", "save"),  # the name before 0.2
    ({"settings": {"rootrank": {"debounceMs": 0}}}, "debounce_ms", 0),
    ({"ignore": "a.b, c.d"}, "ignore", ("a.b", "c.d")),
    ({"severity": {"checkpoint": "info"}}, "severity", {"checkpoint": "information"}),
    ({"logPatterns": ["*.txt"]}, "log_patterns", ("*.txt",)),
    (None, "check_on", "change"),
    ({"pylsp": {"plugins": {}}}, "select", ()),                              # another tool's section
])
def test_parse_settings(raw: object, field: str, value: object):
    settings, problems = parse_settings(raw)
    assert getattr(settings, field) == value and not problems


@pytest.mark.parametrize("raw", [{"lintOn": "sometimes"}, {"debounceMs": -1}, {"severity": {"x": "loud"}},
                                 {"select": [1]}])
def test_bad_settings_keep_defaults(raw: dict):
    settings, problems = parse_settings(raw)
    assert settings == Settings() and len(problems) == 1


def test_partial_update_keeps_the_rest():
    base, _ = parse_settings({"select": ["checkpoint"], "lintOn": "save"})
    settings, _ = parse_settings({"checkOn": "change"}, base)
    assert settings.select == ("checkpoint",) and settings.check_on == "change"
    assert not has_settings(None) and not has_settings({"rootrank": {}}) and has_settings({"select": []})


def test_severity_override_longest_prefix_wins():
    settings, _ = parse_settings({"severity": {"checkpoint": "hint", "checkpoint.reentrant-ddp": "error"}})
    assert settings.severity_for("checkpoint.reentrant-ddp") == "error"
    assert settings.severity_for("checkpoint.use-reentrant-explicit") == "hint"
    assert settings.severity_for("memory.cuda-oom") is None


@pytest.mark.parametrize(("uri", "language", "is_log"), [
    ("file:///r/slurm-123.out", "plaintext", True), ("file:///r/train.log", None, True),
    ("file:///r/x.err", None, True), ("file:///r/notes.txt", "log", True), ("file:///r/train.py", "python", False),
])
def test_log_documents(uri: str, language: str | None, is_log: bool):
    assert Settings().is_log(uri, language) is is_log


SOURCE = """\
import torch
import torch.utils.checkpoint as cp
from torch.nn.parallel import DistributedDataParallel as DDP
from peft import get_peft_model


class M(torch.nn.Module):
    def forward(self, x):
        for i, block in enumerate(self.blocks):
            if i % 2 == 0:
                x = cp.checkpoint(block, x, use_reentrant=False)
        return x

    def checkpoint(self):
        return self.checkpoint()


model = DDP(torch.compile(M()), static_graph=True)
"""


def test_call_reader():
    facts = read_file(SOURCE)
    assert facts is not None
    names = [(c.name, c.line) for c in facts.calls]
    assert names == [("checkpoint", 11), ("DistributedDataParallel", 18), ("compile", 18)]
    [checkpoint] = facts.checkpoint_calls()
    assert checkpoint.keywords == {"use_reentrant": "False"}
    assert checkpoint.loops == ("for i, block in enumerate(self.blocks)",)
    assert checkpoint.conditions == ("i % 2 == 0",)
    assert set(facts.features) == {"DDP", "PEFT", "compile"}
    assert facts.at(11, 20) is checkpoint and facts.at(12, 0) is None
    assert read_file("def broken(:\n") is None


def test_environment_reads_metadata_only(tmp_path: Path):
    site = tmp_path / "venv" / "lib" / "python3.12" / "site-packages"
    (site / "torch-2.5.1+cu121.dist-info").mkdir(parents=True)
    (site / "torch-2.5.1+cu121.dist-info" / "METADATA").write_text("Name: torch\nVersion: 2.5.1+cu121\n")
    (site / "transformers-4.46.0.dist-info").mkdir()
    env = find_environment(str(tmp_path / "venv" / "bin" / "python"), ())
    assert env.version("torch") == "2.5.1+cu121" and env.version("transformers") == "4.46.0"
    assert env.where == str(site)


def test_call_reader_pieces_follow_edits():
    """Pieces are cached by text; lines stay right when an edit above shifts them."""
    before = read_file(SOURCE)
    after = read_file("# a new first line\n" + SOURCE)
    assert before is not None and after is not None
    assert [(c.name, c.line + 1) for c in before.calls] == [(c.name, c.line) for c in after.calls]
    assert {k: v + 1 for k, v in before.features.items()} == after.features
    # A cut inside a string falls back to one parse of the whole file.
    tricky = 'DOC = """\ndef not_a_function():\n"""\nimport torch\nm = torch.compile(f)\n'
    facts = read_file(tricky)
    assert facts is not None and [(c.name, c.line) for c in facts.calls] == [("compile", 5)]


@pytest.mark.parametrize(("torch", "mode", "passed", "call", "expected"), [
    ("1.10.2", "reentrant", False, "checkpoint", "no `use_reentrant` argument"),
    ("2.0.1", "reentrant", False, "checkpoint", "used silently"),
    ("2.3.0a0+git1234", "reentrant", False, "checkpoint", "raises `ValueError`"),
    ("2.4.1", "reentrant", False, "checkpoint", "prints a `UserWarning`"),
    ("2.4.1", "reentrant", True, "checkpoint", "chosen explicitly: no warning"),
    ("2.4.1", "reentrant", False, "gradient_checkpointing_enable", "transformers before 4.38"),  # version unknown
    ("2.4.1", "non-reentrant", True, "checkpoint", "PyTorch recommends"),
    (None, "reentrant", False, "checkpoint", "torch is not installed"),
])
def test_torch_notes(torch: str | None, mode: str, passed: bool, call: str, expected: str):
    from rootrank.check.explain_call import torch_note
    from rootrank.environment import Environment

    env = Environment("site-packages", {"torch": torch} if torch else {})
    assert expected in torch_note(mode, env, passed, call)


@pytest.mark.parametrize(("torch", "curried", "expected"), [
    ("2.13.0", False, "prints `UserWarning: torch.utils.checkpoint: the use_reentrant parameter should be passed"),
    ("2.14.1", False, "(2.14.1)"),  # the 2.14 row's source: the hover says which version it describes
    ("2.15.0", False, "(2.15.0)"),  # read in the 2.15.0 wheel
    ("2.16.0", False, "outside the torch versions read (torch >=2.13,<2.16)"),
    ("2.13.0", True, "there is no curried form: `checkpoint(...)` without a function raises `TypeError: checkpoint() "
                     "missing 1 required positional argument: 'function'`"),
    ("2.14.1", True, "the curried form returns a decorator"),
])
def test_torch_note_reads_the_torch_facts(torch: str, curried: bool, expected: str):
    from rootrank.check.explain_call import torch_note
    from rootrank.environment import Environment

    env = Environment("site-packages", {"torch": torch})
    assert expected in torch_note("reentrant", env, False, "checkpoint", curried)


@pytest.mark.parametrize(("transformers", "expected"), [
    ("4.57.6", "transformers passes `use_reentrant` explicitly"),
    ("4.37.2", "transformers before 4.38"),
])
def test_torch_note_reads_transformers_version(transformers: str, expected: str):
    from rootrank.check.explain_call import torch_note
    from rootrank.environment import Environment

    env = Environment("site-packages", {"torch": "2.13.0", "transformers": transformers})
    assert expected in torch_note("reentrant", env, False, "activation_checkpointing_enable")


def _diagnosis(severity: Severity, rank: int | None, collateral: tuple = ()):
    from rootrank.model import Diagnosis, Evidence, RootCause

    root = RootCause("memory.cuda-oom", "CUDA out of memory", severity, rank, None, 2,
                     (Evidence(2, rank, "oom"), Evidence(4, 1, "peer"), Evidence(99, 1, "out of range")),
                     "why", "fix", "verify", ())
    return Diagnosis(root, (), collateral, (), (0, 1))


@pytest.mark.parametrize(("severity", "rank", "message", "lsp_severity"), [
    (Severity.ERROR, 3, "initiating failure: rank 3, CUDA out of memory", types.DiagnosticSeverity.Error),
    (Severity.ERROR, None, "initiating failure: CUDA out of memory", types.DiagnosticSeverity.Error),
    (Severity.WARNING, None, "likely cause: CUDA out of memory", types.DiagnosticSeverity.Warning),
])
def test_log_diagnostics(severity: Severity, rank: int | None, message: str, lsp_severity: types.DiagnosticSeverity):
    from rootrank.lsp.logs import to_diagnostics
    from rootrank.model import Collateral

    lines = Lines("a\nOOM here\nc\nrank 1 lost its peer\ne")
    collateral = (Collateral(1, "distributed.peer-exited", 4, "A peer exited"),
                  Collateral(2, "distributed.peer-exited", 40, "beyond the text"))
    initiating, *others = to_diagnostics(_diagnosis(severity, rank, collateral), lines, "file:///run.log")
    assert initiating.message == message and initiating.severity == lsp_severity
    assert initiating.range == types.Range(types.Position(1, 0), types.Position(1, 8))
    assert [r.location.range.start.line for r in initiating.related_information or []] == [3]
    [peer] = others  # the collateral beyond the text is left out
    assert peer.severity == types.DiagnosticSeverity.Information and peer.message.startswith("collateral: rank 1, ")
    assert [r.location.range for r in peer.related_information or []] == [initiating.range]


EVERY_CALL = """\
import functools
import torch
from torch.utils.checkpoint import checkpoint, checkpoint_sequential
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (
    CheckpointImpl, apply_activation_checkpointing, checkpoint_wrapper)
from torch.distributed.fsdp import fully_shard
from torch.nn.parallel import DistributedDataParallel

y = checkpoint_sequential(model.layers, 4, x, use_reentrant=True)
model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
block = checkpoint_wrapper(block, checkpoint_impl=CheckpointImpl.REENTRANT)
apply_activation_checkpointing(model, check_fn=lambda m: isinstance(m, Block))
fully_shard(model)
ddp = DistributedDataParallel(model, static_graph=True)
compiled = torch.compile(model)
"""


@pytest.mark.parametrize(("line", "expected"), [
    (9, ["**Reentrant**: `use_reentrant=True`", "split into `4` segments", "chosen explicitly: no warning"]),
    (10, ["**Non-reentrant**", "every layer of the model"]),
    (11, ["**Reentrant**: `checkpoint_impl=CheckpointImpl.REENTRANT`", "the wrapped module `block`"]),
    (12, ["**Non-reentrant**", "`check_fn` is true: `lambda m: isinstance(m, Block)`"]),
    (13, ["FSDP2", "Checkpointing in this file", "line 11: `checkpoint_wrapper` — reentrant"]),
    (14, ["`static_graph=True`", "Checkpointing in this file"]),
    (15, ["TorchDynamo", "reentrant checkpoints break the compiled graph"]),
])
def test_hover_for_every_checkpoint_related_call(line: int, expected: list[str]):
    from rootrank.check.explain_call import call_markdown
    from rootrank.environment import Environment

    facts = read_file(EVERY_CALL)
    assert facts is not None
    call = facts.at(line, EVERY_CALL.splitlines()[line - 1].index("("))
    assert call is not None, line
    text = call_markdown(call, facts, Environment("site-packages", {"torch": "2.6.0"}))
    for piece in expected:
        assert piece in text, (piece, text)
    assert set(facts.features) >= {"FSDP", "DDP", "compile"}


def test_diagnosis_stops_when_cancelled():
    import threading

    from rootrank.lsp import engine

    cancel = threading.Event()
    text = "[rank1]: RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    seen: list[tuple[int, int]] = []
    result = engine.diagnose_text(text, "-", cancel, lambda done, total: seen.append((done, total)))
    assert result == engine.diagnose_text(text, "-")  # the same pipeline as the plain call
    cancel.set()
    with pytest.raises(engine.DiagnosisCancelledError):
        engine.diagnose_text(text, "-", cancel)


def test_call_reader_on_a_deep_but_valid_file():
    source = "from torch.utils.checkpoint import checkpoint\ny = checkpoint(f, " + "+".join(["x"] * 900) + ")\n"
    compile(source, "deep.py", "exec")
    facts = read_file(source)
    assert facts is not None and [c.name for c in facts.calls] == ["checkpoint"]


def test_diagnose_command_reads_regular_files_only(tmp_path: Path):
    import os

    from pygls.exceptions import JsonRpcInvalidParams

    from rootrank.lsp.commands import read_source_file

    (tmp_path / "run.log").write_text("hello\n")
    assert read_source_file(str(tmp_path / "run.log")) == "hello\n"
    os.mkfifo(tmp_path / "pipe.log")
    for path in (tmp_path / "pipe.log", Path("/dev/zero"), tmp_path, tmp_path / "missing.log"):
        with pytest.raises(JsonRpcInvalidParams):
            read_source_file(str(path))


def test_converted_diagnostics_are_reused_only_while_their_lines_are_unchanged() -> None:
    # diagnostics.compute remembers conversions; the result must always equal a fresh conversion.
    from rootrank.lsp import diagnostics

    source = ("import torch\nfrom torch.utils.checkpoint import checkpoint\n\n\n"
              "def forward(block, x):\n    return checkpoint(block, x)\n")

    def fresh(text: str, version: int, encoding: str = "utf-16") -> list[types.Diagnostic]:
        diagnostics._CONVERTED.clear()
        return diagnostics.compute(text, "t.py", version, Settings(), encoding, [])[1]

    first = fresh(source, 1)
    assert first and first[0].data["version"] == 1
    # the same findings again: reused, with the new version
    again = diagnostics.compute(source, "t.py", 2, Settings(), "utf-16", [])[1]
    assert again == fresh(source, 2)
    assert again[0].data["version"] == 2
    # a non-ASCII character before the call on its own line moves its UTF-16 columns
    moved = source.replace("    return checkpoint", "    return 𝑥 and checkpoint")
    diagnostics.compute(source, "t.py", 3, Settings(), "utf-16", [])
    reused = diagnostics.compute(moved, "t.py", 4, Settings(), "utf-16", [])[1]
    assert reused == fresh(moved, 4)
    assert reused[0].range != first[0].range
    # another line changes: the conversion of this one is the same
    other = source.replace("import torch\n", "import torch  # changed\n")
    assert diagnostics.compute(other, "t.py", 5, Settings(), "utf-16", [])[1] == fresh(other, 5)
    # the client's encoding is part of what a conversion depends on
    assert diagnostics.compute(moved, "t.py", 6, Settings(), "utf-8", [])[1] == fresh(moved, 6, "utf-8")
