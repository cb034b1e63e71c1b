"""Issue #22 item 6: collateral ranks are reported compactly. `collateral` lists at most
MAX_COLLATERAL_LISTED ranks; `collateral_ranges` covers every one of them as ranges, with
`collateral_count`, so the JSON does not carry one object per rank of a 100k-rank cascade, and the
initiating rank and its evidence keep their meaning."""

from __future__ import annotations

from pathlib import Path

from rootrank.diagnose import diagnose_paths
from rootrank.diagnose.report import MAX_COLLATERAL_LISTED
from rootrank.render.json import diagnosis_to_json
from rootrank.render.text import render_text

# The recv timeout torch 2.13 (gloo) printed in the real runs under tests/fixtures/logs/ (distributed.rank-stalled--*-gloo-*);
# the cause is a plain uncaught exception on one rank, printed first.
TIMEOUT = ("[rank{rank}]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] "
           "Timed out waiting 15000ms for recv operation to complete\n")
CAUSE = ("[rank{rank}]: Traceback (most recent call last):\n"
         '[rank{rank}]:   File "/job/train.py", line 41, in <module>\n'
         "[rank{rank}]:     loss = step(batch)\n"
         "[rank{rank}]: ValueError: batch 3 has 0 rows\n")


def _log(tmp_path: Path, ranks: int, fail_rank: int) -> Path:
    path = tmp_path / "job.log"
    path.write_text(CAUSE.format(rank=fail_rank)
                    + "".join(TIMEOUT.format(rank=r) for r in range(ranks) if r != fail_rank))
    return path


def test_collateral_ranks_are_compact_ranges(tmp_path: Path) -> None:
    ranks, fail_rank = 3000, 1000
    d = diagnose_paths([str(_log(tmp_path, ranks, fail_rank))])
    doc = diagnosis_to_json(d)
    assert doc["root_cause"]["rank"] == fail_rank
    assert doc["root_cause"]["evidence"][0]["text"].endswith("ValueError: batch 3 has 0 rows")
    assert len(doc["collateral"]) == MAX_COLLATERAL_LISTED
    assert [c["rank"] for c in doc["collateral"]] == list(range(MAX_COLLATERAL_LISTED))
    assert doc["collateral_count"] == ranks - 1
    groups = doc["collateral_ranges"]
    assert len(groups) == 1
    assert groups[0]["ranks"] == f"0-{fail_rank - 1},{fail_rank + 1}-{ranks - 1}"
    assert groups[0]["count"] == ranks - 1
    text = render_text(d)
    assert f"0-{fail_rank - 1},{fail_rank + 1}-{ranks - 1}" in text
    assert "[rank1500]" not in text


def test_few_collateral_ranks_are_all_listed(tmp_path: Path) -> None:
    doc = diagnosis_to_json(diagnose_paths([str(_log(tmp_path, 8, 2))]))
    assert doc["root_cause"]["rank"] == 2
    assert sorted(c["rank"] for c in doc["collateral"]) == [0, 1, 3, 4, 5, 6, 7]
    assert doc["collateral_count"] == 7
    assert doc["collateral_ranges"][0]["ranks"] == "0-1,3-7"
