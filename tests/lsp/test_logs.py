"""Training logs opened as documents: initiating failure, collateral ranks, hover, progress, staleness."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.lsp.lsp_helpers import change_document, diagnostics_for, open_document, wait_for

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "logs"
RUN = FIXTURES / "process.uncaught-exception--rank2-valueerror-step3-no-record"
SIGKILL = FIXTURES / "process.killed-signal--rank1-sigkill-step4-plain"


def _fixture(path: Path) -> tuple[str, dict]:
    if not (path / "log.txt").is_file():
        pytest.skip(f"fixture {path.name} is not in this checkout")
    return (path / "log.txt").read_text(encoding="utf-8"), yaml.safe_load((path / "expect.yaml").read_text())


def _noise(lines: int) -> str:
    return "".join(f"[rank{i % 4}]:step {i} loss 2.{i % 1000:03d} lr 3e-4 grad_norm 1.21\n" for i in range(lines))


@pytest.mark.parametrize("name", ["slurm-81234.out", "train.log"])
async def test_log_document_diagnostics(client: LanguageClient, name: str):
    text, expect = _fixture(RUN)
    uri = open_document(client, name, text, language_id="plaintext")
    diagnostics = await diagnostics_for(client, uri, version=1, min_count=1)
    [initiating] = [d for d in diagnostics if d.severity == types.DiagnosticSeverity.Error]
    rank = expect["initiating_rank"]
    assert initiating.message.startswith(f"initiating failure: rank {rank}, ")
    assert initiating.source == "rootrank" and initiating.code
    collateral = [d for d in diagnostics if d.severity == types.DiagnosticSeverity.Information]
    assert collateral, "the ranks that failed because rank 2 did"
    for diagnostic in collateral:
        assert diagnostic.message.startswith("collateral: rank ")
        assert f"rank {rank}" not in diagnostic.message.split(",")[0]
        [related] = diagnostic.related_information or []
        assert related.location.uri == uri and related.location.range == initiating.range
    # Hover on the initiating line: the fix and the command that verifies it.
    hover = await client.text_document_hover_async(types.HoverParams(
        types.TextDocumentIdentifier(uri), types.Position(initiating.range.start.line, 3)))
    assert hover is not None
    value = hover.contents.value  # type: ignore[union-attr]
    assert "**Fix**" in value and "**Verify**" in value and "```sh" in value
    hover = await client.text_document_hover_async(types.HoverParams(
        types.TextDocumentIdentifier(uri), types.Position(collateral[0].range.start.line, 0)))
    assert hover is not None and "fix the initiating failure first" in hover.contents.value  # type: ignore[union-attr]


async def test_language_id_log(client: LanguageClient):
    text, expect = _fixture(RUN)
    uri = open_document(client, "output.txt", text, language_id="log")
    diagnostics = await diagnostics_for(client, uri, version=1, min_count=1)
    assert any(d.message.startswith(f"initiating failure: rank {expect['initiating_rank']}") for d in diagnostics)


async def test_stale_result_is_dropped(slow_logs: LanguageClient):
    client = slow_logs
    text, expect = _fixture(RUN)
    other, other_expect = _fixture(SIGKILL)
    assert other_expect["initiating_rank"] != expect["initiating_rank"]
    uri = open_document(client, "big.log", _noise(1_000) + text)
    # Progress has begun: the diagnosis of version 1 is running.
    await wait_for(lambda: any(client.progress_reports.values()), what="the version-1 diagnosis to start")
    change_document(client, uri, 2, other)
    await wait_for(lambda: any("dropped a stale diagnosis" in m.message and "(version 1)" in m.message
                               for m in client.log_messages), what="the version-1 result to be dropped")
    diagnostics = await diagnostics_for(client, uri, version=2, min_count=1)
    assert any(d.message.startswith(f"initiating failure: rank {other_expect['initiating_rank']},")
               for d in diagnostics)
    published = [p for p in client.published if p.uri == uri]  # type: ignore[attr-defined]
    assert published and all(p.version == 2 for p in published), "nothing computed on version 1 was published"


async def test_large_log_reports_progress_and_can_be_cancelled(slow_logs: LanguageClient):
    client = slow_logs
    text, _ = _fixture(RUN)
    uri = open_document(client, "huge.log", _noise(1_000) + text)
    token = await wait_for(lambda: next((t for t, reports in client.progress_reports.items() if reports), None),
                           what="a progress report")
    begin = client.progress_reports[token][0]
    assert isinstance(begin, types.WorkDoneProgressBegin) and begin.cancellable
    client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))
    end = await wait_for(lambda: next((r for r in client.progress_reports[token]
                                       if isinstance(r, types.WorkDoneProgressEnd)), None), what="progress end")
    assert end.message == "cancelled"
    assert not [p for p in client.published if p.uri == uri]  # type: ignore[attr-defined]
    # The server is still serving: a small log is diagnosed as usual, a long one with progress to its end.
    small = open_document(client, "small.log", text)
    assert await diagnostics_for(client, small, version=1, min_count=1)
    other = open_document(client, "other.log", _noise(600) + text)
    assert await diagnostics_for(client, other, version=1, min_count=1)
    ends = [r for reports in client.progress_reports.values() for r in reports
            if isinstance(r, types.WorkDoneProgressEnd)]
    assert [e.message for e in ends].count("done") == 1
    reports = [r for reports in client.progress_reports.values() for r in reports
               if isinstance(r, types.WorkDoneProgressReport)]
    assert all(0 <= (r.percentage or 0) <= 100 for r in reports)


async def test_a_log_that_grows_gets_diagnostics_from_the_lines_added(client: LanguageClient):
    """A log still being written, reloaded as it grows: each version that only appends is diagnosed by the
    live engine from the lines added, with the diagnostics a fresh open of the same text gets."""
    text, expect = _fixture(RUN)
    lines = text.splitlines(keepends=True)
    cause = next(i for i, line in enumerate(lines) if "ValueError" in line and line.startswith("[rank2]"))
    uri = open_document(client, "growing.log", "".join(lines[:5]), language_id="log")
    first = await diagnostics_for(client, uri, version=1)
    assert not any(d.severity == types.DiagnosticSeverity.Error for d in first)
    change_document(client, uri, 2, "".join(lines[: cause + 5]))
    grown = await diagnostics_for(client, uri, version=2, min_count=1)
    assert any(d.message.startswith(f"initiating failure: rank {expect['initiating_rank']}") for d in grown)
    change_document(client, uri, 3, text)
    final = await diagnostics_for(client, uri, version=3, min_count=1)
    fresh_uri = open_document(client, "fresh.log", text, language_id="log")
    fresh = await diagnostics_for(client, fresh_uri, version=1, min_count=1)
    assert [(d.range, d.message, d.code, d.severity) for d in final] == \
        [(d.range, d.message, d.code, d.severity) for d in fresh]


def test_a_growing_text_is_fed_only_what_was_added() -> None:
    from rootrank.diagnose import diagnose_text
    from rootrank.diagnose.live import GrowingText
    from rootrank.render.json import diagnosis_to_json

    text, _ = _fixture(RUN)
    lines = text.splitlines(keepends=True)
    growing = GrowingText("run.log")
    for end in (3, 40, 70, len(lines)):
        part = "".join(lines[:end])
        assert growing.diagnose(part) is not None
    assert growing.restarts == 1 and growing.fed == text
    final = growing.live.close(timeout=60) if growing.live else None
    assert final is not None
    assert diagnosis_to_json(final) == diagnosis_to_json(diagnose_text(text, source="run.log"))
    growing.feed("another text\n")  # not an append: starts over
    assert growing.restarts == 2
    growing.close()
