"""Filling an entry's fix: variants for the user's stack, captured numbers, no sentence with a hole."""

from __future__ import annotations

from rootrank.diagnose.fixtext import fill, variant_applies
from rootrank.library import FixVariant


def test_placeholders_are_filled() -> None:
    assert fill("The step asked for {requested}.", {"requested": "2.00 GiB"}) == "The step asked for 2.00 GiB."


def test_a_sentence_or_item_naming_a_missing_field_is_left_out() -> None:
    text = "Peak on GPU {gpu} was\nreached by {requested}.\nLower the peak:\n1. Reduce the batch.\n2. Free {missing}."
    assert fill(text, {"requested": "2 GiB"}) == "Lower the peak:\n1. Reduce the batch."


def test_a_step_left_out_leaves_no_gap_in_the_numbering() -> None:
    text = ("Do this:\n1. Find {missing}.\n2. Read the report:\n   1. first item\n   2. second {missing}\n"
            "   3. third\n3. Rerun.\n\nThen:\n1. Check {gpu}.\n2. Done.\n```sh\n1. not a step\n```")
    assert fill(text, {"gpu": "0"}) == (
        "Do this:\n1. Read the report:\n   1. first item\n   2. third\n2. Rerun.\n\nThen:\n1. Check 0.\n2. Done."
        "\n```sh\n1. not a step\n```")


def test_code_blocks_are_kept_whole() -> None:
    text = "Run:\n```sh\nexport A=1\n```"
    assert fill(text, {}) == text


def test_variants_by_stack_field_and_flag() -> None:
    peft = FixVariant({"stack": "peft"}, "x")
    either = FixVariant({"stack": ["fsdp", "deepspeed"]}, "x")
    flagged = FixVariant({"flag": "fragmented"}, "x")
    field = FixVariant({"field": "gpu"}, "x")
    assert variant_applies(peft, {"peft", "transformers"}, {})
    assert not variant_applies(peft, {"deepspeed"}, {})
    assert variant_applies(either, {"deepspeed"}, {})
    assert variant_applies(flagged, set(), {"fragmented": "true"})
    assert not variant_applies(flagged, set(), {})
    assert variant_applies(field, set(), {"gpu": "0"}) and not variant_applies(field, set(), {})


def test_an_oom_on_a_gpu_full_of_other_memory_is_not_called_fragmentation() -> None:
    from rootrank.diagnose.enrich import enrich
    # accelerate#1519: 262 MiB reserved by PyTorch on a full 79 GiB GPU (two processes on GPU 0).
    fields = {"requested": "20.00 MiB", "total": "79.35 GiB", "allocated": "227.85 MiB", "free": "19.69 MiB",
              "reserved": "262.00 MiB"}
    flags = enrich("memory.cuda-oom", fields)
    assert flags.get("held_elsewhere") == "true" and "fragmented" not in flags
    assert flags["pytorch_held"] == "262.00 MiB"
    # A GPU PyTorch itself filled (test_initiator's OOM, torch >= 2.3 wording), with more reserved but unallocated
    # than the request: fragmentation.
    own = {"requested": "2.00 GiB", "total": "79.25 GiB", "free": "1.96 GiB", "allocated": "60.70 GiB",
           "reserved_unallocated": "14.15 GiB"}
    flags = enrich("memory.cuda-oom", own)
    assert "held_elsewhere" not in flags and flags.get("fragmented") == "true"
