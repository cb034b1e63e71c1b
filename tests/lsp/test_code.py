"""Training code: diagnostics, hover, quick fixes, fix-all and noqa, through VS Code's and Neovim's capabilities."""

from __future__ import annotations

import ast

import yaml
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.lsp.lsp_helpers import (
    apply_edits,
    change_document,
    diagnostics_for,
    edits_of,
    encoding_of,
    open_document,
    units,
)

RULE = "checkpoint.use-reentrant-explicit"

TRAIN = """\
import torch
from torch.utils.checkpoint import checkpoint


class Model(torch.nn.Module):
    def forward(self, x):
        for block in self.blocks:
            x = checkpoint(block, x)  # é 😀 non-ASCII before the fix point
        return self.head(x)
"""
CALL_LINE = 7  # 0-based line of `checkpoint(block, x)`


def _call_diagnostic(diagnostics):
    [diagnostic] = [d for d in diagnostics if d.code == RULE]
    return diagnostic


async def test_diagnostic_on_checkpoint_call(client: LanguageClient):
    uri = open_document(client, "train.py", TRAIN)
    diagnostic = _call_diagnostic(await diagnostics_for(client, uri, version=1, min_count=1))
    line = TRAIN.splitlines()[CALL_LINE]
    assert diagnostic.source == "rootrank"
    assert diagnostic.severity == types.DiagnosticSeverity.Warning
    assert diagnostic.range.start == types.Position(CALL_LINE, line.index("checkpoint("))
    assert "use_reentrant" in diagnostic.message
    if diagnostic.code_description is not None:  # the docs page exists once docs/rules is generated
        assert diagnostic.code_description.href.startswith("file://")
        assert diagnostic.code_description.href.endswith(f"{RULE}.md")
    data = diagnostic.data
    assert data["rule"] == RULE and data["version"] == 1
    assert [f["applicability"] for f in data["fixes"]] and data["noqa"]


async def test_positions_after_non_ascii_text(client: LanguageClient):
    """Columns are code points in rootrank and UTF-16 (or the negotiated encoding) units in LSP."""
    line = 'label = "é😀"; y = checkpoint(block, x)'
    source = f"from torch.utils.checkpoint import checkpoint\n{line}\n"
    uri = open_document(client, "unicode.py", source)
    diagnostic = _call_diagnostic(await diagnostics_for(client, uri, version=1, min_count=1))
    encoding = encoding_of(client)
    assert diagnostic.range.start == types.Position(1, units(line[: line.index("checkpoint(")], encoding))
    assert diagnostic.range.end.character == units(line[: line.index("(block")], encoding)
    [preferred] = [a for a in await client.text_document_code_action_async(types.CodeActionParams(
        types.TextDocumentIdentifier(uri), diagnostic.range, types.CodeActionContext(diagnostics=[diagnostic])))
        or [] if isinstance(a, types.CodeAction) and a.is_preferred]
    fixed = apply_edits(source, edits_of(preferred, uri), encoding).splitlines()[1]
    assert fixed.startswith('label = "é😀"; y = checkpoint(block, x, use_reentrant=')


async def test_hover_explains_use_reentrant(client: LanguageClient):
    uri = open_document(client, "train.py", TRAIN)
    await diagnostics_for(client, uri, version=1, min_count=1)
    column = TRAIN.splitlines()[CALL_LINE].index("checkpoint(") + 3
    hover = await client.text_document_hover_async(types.HoverParams(
        types.TextDocumentIdentifier(uri), types.Position(CALL_LINE, column)))
    assert hover is not None
    text = hover.contents.value  # type: ignore[union-attr]
    assert "use_reentrant" in text and "Reentrant" in text
    assert "torch 2.3.1" in text  # read from the workspace .venv's dist-info, torch never imported
    assert "once per iteration of `for block in self.blocks`" in text
    assert f"rootrank `{RULE}`" in text  # the diagnostic's part: the entry's docs


async def test_hover_on_call_without_finding(client: LanguageClient):
    source = TRAIN.replace("checkpoint(block, x)", "checkpoint(block, x, use_reentrant=False)")
    source += "\nmodel = torch.compile(Model())\n"
    uri = open_document(client, "clean.py", source)
    assert not [d for d in await diagnostics_for(client, uri, version=1) if d.code == RULE]
    column = source.splitlines()[CALL_LINE].index("checkpoint(") + 1
    hover = await client.text_document_hover_async(types.HoverParams(
        types.TextDocumentIdentifier(uri), types.Position(CALL_LINE, column)))
    assert hover is not None
    text = hover.contents.value  # type: ignore[union-attr]
    assert "Non-reentrant" in text and "`torch.compile`" in text
    compile_line = len(source.splitlines()) - 1
    hover = await client.text_document_hover_async(types.HoverParams(
        types.TextDocumentIdentifier(uri), types.Position(compile_line, 12)))
    assert hover is not None and "Checkpointing in this file" in hover.contents.value  # type: ignore[union-attr]


async def test_quick_fix_applies_and_parses(client: LanguageClient):
    uri = open_document(client, "train.py", TRAIN)
    diagnostic = _call_diagnostic(await diagnostics_for(client, uri, version=1, min_count=1))
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        types.TextDocumentIdentifier(uri), diagnostic.range,
        types.CodeActionContext(diagnostics=[diagnostic], only=[types.CodeActionKind.QuickFix])))
    assert actions
    fixes = [a for a in actions if isinstance(a, types.CodeAction) and "use_reentrant" in a.title]
    assert [a for a in fixes if a.is_preferred], "the engine's preferred fix is marked"
    for action in fixes:
        fixed = apply_edits(TRAIN, edits_of(action, uri), encoding_of(client))
        ast.parse(fixed)  # still valid Python
        call = fixed.splitlines()[CALL_LINE]
        assert "use_reentrant=" in call and call.rstrip().endswith("# é 😀 non-ASCII before the fix point")
        unsafe = diagnostic.data["fixes"][[f["title"] for f in diagnostic.data["fixes"]].index(
            action.title.removesuffix(" (unsafe)"))]["applicability"] != "safe"
        assert ("unsafe" in action.title.lower()) == unsafe
    # After applying, the server re-checks and the diagnostic goes away.
    change_document(client, uri, 2, apply_edits(TRAIN, edits_of(fixes[0], uri), encoding_of(client)))
    assert not [d for d in await diagnostics_for(client, uri, version=2) if d.code == RULE]


async def test_fix_all_is_safe_only(client: LanguageClient):
    source = TRAIN + "\n\ndef tail(block, y):\n    return checkpoint(block, y)\n"
    uri = open_document(client, "train.py", source)
    diagnostics = await diagnostics_for(client, uri, version=1, min_count=2)
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        types.TextDocumentIdentifier(uri), types.Range(types.Position(0, 0), types.Position(0, 0)),
        types.CodeActionContext(diagnostics=[], only=[types.CodeActionKind.SourceFixAll])))
    assert actions
    [fix_all] = [a for a in actions if isinstance(a, types.CodeAction) and a.kind == "source.fixAll.rootrank"]
    fixed = apply_edits(source, edits_of(fix_all, uri), encoding_of(client))
    ast.parse(fixed)
    safe_texts = {e["newText"] for d in diagnostics for f in d.data["fixes"] if f["applicability"] == "safe"
                  for e in f["edits"]}
    unsafe_texts = {e["newText"] for d in diagnostics for f in d.data["fixes"] if f["applicability"] != "safe"
                    for e in f["edits"]} - safe_texts
    assert all(e.new_text in safe_texts for e in edits_of(fix_all, uri))
    assert not any(t in fixed for t in unsafe_texts)
    assert fixed.count("use_reentrant=") == 2


async def test_noqa_action(client: LanguageClient):
    uri = open_document(client, "train.py", TRAIN)
    diagnostic = _call_diagnostic(await diagnostics_for(client, uri, version=1, min_count=1))
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        types.TextDocumentIdentifier(uri), diagnostic.range, types.CodeActionContext(diagnostics=[diagnostic])))
    [ignore] = [a for a in actions or [] if isinstance(a, types.CodeAction) and a.title == f"Ignore {RULE} on this line"]
    fixed = apply_edits(TRAIN, edits_of(ignore, uri), encoding_of(client))
    # The line already had a comment: the noqa goes at its end.
    assert fixed.splitlines()[CALL_LINE].endswith(f"# é 😀 non-ASCII before the fix point  # noqa: {RULE}")
    change_document(client, uri, 2, fixed)
    assert not [d for d in await diagnostics_for(client, uri, version=2) if d.code == RULE]
    # Hover on the id in the comment: the entry's docs.
    line = fixed.splitlines()[CALL_LINE]
    column = units(line[: line.index(RULE) + 4], encoding_of(client))
    hover = await client.text_document_hover_async(types.HoverParams(
        types.TextDocumentIdentifier(uri), types.Position(CALL_LINE, column)))
    assert hover is not None and "silenced on this line" in hover.contents.value  # type: ignore[union-attr]


async def test_noqa_extends_existing_list(client: LanguageClient):
    source = TRAIN.replace("# é 😀 non-ASCII before the fix point", "# noqa: E501")
    uri = open_document(client, "train.py", source)
    diagnostic = _call_diagnostic(await diagnostics_for(client, uri, version=1, min_count=1))
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        types.TextDocumentIdentifier(uri), diagnostic.range, types.CodeActionContext(diagnostics=[diagnostic])))
    [ignore] = [a for a in actions or [] if isinstance(a, types.CodeAction) and a.title.startswith("Ignore")]
    assert apply_edits(source, edits_of(ignore, uri), encoding_of(client)).splitlines()[CALL_LINE].endswith(f"# noqa: E501, {RULE}")


async def test_settings_select_ignore_and_severity(client: LanguageClient):
    uri = open_document(client, "train.py", TRAIN)
    await diagnostics_for(client, uri, version=1, min_count=1)
    client.published.clear()  # type: ignore[attr-defined]
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"rootrank": {"severity": {"checkpoint": "error"}}}))
    diagnostic = _call_diagnostic(await diagnostics_for(client, uri, version=1, min_count=1))
    assert diagnostic.severity == types.DiagnosticSeverity.Error
    client.published.clear()  # type: ignore[attr-defined]
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"rootrank": {"ignore": [RULE]}}))
    assert not [d for d in await diagnostics_for(client, uri, version=1) if d.code == RULE]


CONFIG_YAML = "model_name: llama\ngradient_checkpointing: true\nuse_cache: true\n"
CONFIG_JSON = '{"gradient_checkpointing": true, "use_cache": true}\n'


async def test_training_config_yaml(client: LanguageClient):
    uri = open_document(client, "trainer.yaml", CONFIG_YAML, language_id="yaml")
    diagnostics = await diagnostics_for(client, uri, version=1, min_count=2)
    assert {d.code for d in diagnostics} >= {RULE, "checkpoint.hf-use-cache"}
    # fix-all: only safe fixes, and the result is still a valid config
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        types.TextDocumentIdentifier(uri), types.Range(types.Position(0, 0), types.Position(0, 0)),
        types.CodeActionContext(diagnostics=[], only=["source.fixAll.rootrank"])))
    [fix_all] = actions or []
    fixed = yaml.safe_load(apply_edits(CONFIG_YAML, edits_of(fix_all, uri), encoding_of(client)))
    assert fixed["use_cache"] is False and fixed["gradient_checkpointing_kwargs"] == {"use_reentrant": True}
    # YAML has comments: the noqa action is offered
    cache = next(d for d in diagnostics if d.code == "checkpoint.hf-use-cache")
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        types.TextDocumentIdentifier(uri), cache.range, types.CodeActionContext(diagnostics=[cache])))
    assert any(a.title == "Ignore checkpoint.hf-use-cache on this line" for a in actions or [])


async def test_training_config_json_has_no_noqa(vscode: LanguageClient):
    uri = open_document(vscode, "ds_config.json", CONFIG_JSON, language_id="json")
    diagnostics = await diagnostics_for(vscode, uri, version=1, min_count=2)
    actions = await vscode.text_document_code_action_async(types.CodeActionParams(
        types.TextDocumentIdentifier(uri), diagnostics[0].range, types.CodeActionContext(diagnostics=diagnostics)))
    titles = [a.title for a in actions or []]
    assert titles and not any(t.startswith("Ignore") for t in titles)


async def test_check_on_save(vscode: LanguageClient):
    client = vscode
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"rootrank": {"checkOn": "save"}}))
    uri = open_document(client, "train.py", TRAIN)
    await diagnostics_for(client, uri, version=1, min_count=1)  # opening a file always checks it
    fixed = TRAIN.replace("checkpoint(block, x)", "checkpoint(block, x, use_reentrant=False)")
    change_document(client, uri, 2, fixed)
    hover = await client.text_document_hover_async(types.HoverParams(  # a round trip: the change is processed
        types.TextDocumentIdentifier(uri), types.Position(0, 0)))
    assert hover is None
    assert not [p for p in client.published if p.uri == uri and p.version == 2]  # type: ignore[attr-defined]
    client.text_document_did_save(types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri)))
    assert not [d for d in await diagnostics_for(client, uri, version=2) if d.code == RULE]


async def test_a_burst_of_edits_is_checked_once(vscode: LanguageClient):
    client = vscode
    uri = open_document(client, "train.py", TRAIN)
    await diagnostics_for(client, uri, version=1, min_count=1)
    for version in range(2, 7):  # typing: five edits well inside the debounce window
        change_document(client, uri, version, TRAIN + "#" * version)
    await diagnostics_for(client, uri, version=6, min_count=1)
    versions = [p.version for p in client.published if p.uri == uri]  # type: ignore[attr-defined]
    assert not {3, 4, 5} & set(versions), versions  # the edits in between were never checked


async def test_settings_pulled_when_the_client_sends_null(vscode: LanguageClient):
    """VS Code's model: didChangeConfiguration carries null and the server asks for its section."""
    client = vscode
    uri = open_document(client, "train.py", TRAIN)
    await diagnostics_for(client, uri, version=1, min_count=1)
    client.set_configuration({"ignore": [RULE]}, section="rootrank")
    client.published.clear()  # type: ignore[attr-defined]
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    assert not [d for d in await diagnostics_for(client, uri, version=1) if d.code == RULE]
