"""A Measurement as text, JSON (schema rootrank.measure/1, docs/measure-schema.md) or Markdown.

Consecutive blocks with the same numbers and the same configuration share one row
(`model.layers.0-31`), so a 32-layer model reads as one line per kind of block.
"""

from __future__ import annotations

import os
from typing import Any

from rootrank.measure.analysis import _span, fraction, human_bytes, human_flops
from rootrank.measure.records import BlockReport, Measurement
from rootrank.model import plain

SCHEMA = "rootrank.measure/1"
CONFIG_LABELS = {"none": "no checkpointing", "as-configured": "as configured", "all-blocks": "every block",
                 "plan": "plan"}


def measurement_to_json(m: Measurement) -> dict[str, Any]:
    p = m.probe
    return {
        "schema": SCHEMA,
        "subject": m.subject,
        "environment": {"python": p.python, "torch": p.torch, "transformers": p.transformers, "device": p.device},
        "model": {"class": p.model_class, "training": p.training, "parameters": p.parameters,
                  "parameter_bytes": p.parameter_bytes, "dtype": p.dtype, "attention": p.attention,
                  "batch": list(p.batch), "hf_checkpointing_flag": p.hf_flag},
        "detection": p.detection,
        "flops": {"forward": p.forward_flops, "step": p.step_flops},
        "blocks": [plain(b) for b in m.blocks],
        "other_bytes": m.other_bytes,
        "regions": [plain(r) for r in m.regions],
        "configurations": {c.name: {"activation_bytes": c.activation_bytes, "recompute_flops": c.recompute_flops,
                                    "recompute_fraction": round(c.recompute_fraction, 6), "blocks": list(c.blocks),
                                    "how": c.how}
                           for c in m.configurations},
        "plan": {"blocks": [m.blocks[b].name for b in m.plan.blocks], "budget_bytes": m.plan.budget_bytes,
                 "fits": m.plan.fits, "how": m.plan.how, "code": m.plan.code},
        "cuda": {"device": p.cuda_name, "runs": {r.label: {"peak_bytes": r.peak_bytes, "step_seconds": r.step_seconds}
                                                 for r in p.cuda}} if p.cuda else None,
        "findings": [{"id": f.rule, "severity": f.severity.value, "message": f.message, "blocks": list(f.blocks),
                      "numbers": f.numbers} for f in m.findings],
    }


def _groups(blocks: tuple[BlockReport, ...]) -> list[list[BlockReport]]:
    groups: list[list[BlockReport]] = []
    for b in blocks:
        key = (b.cls, b.activation_bytes, b.checkpointed_bytes, b.saving_bytes, b.configured_bytes, b.configured,
               b.recompute_flops, b.in_plan)
        last = groups[-1][0] if groups else None
        if last is not None and (last.cls, last.activation_bytes, last.checkpointed_bytes, last.saving_bytes,
                                 last.configured_bytes, last.configured, last.recompute_flops, last.in_plan) == key:
            groups[-1].append(b)
        else:
            groups.append([b])
    return groups


def _rows(m: Measurement) -> tuple[list[str], list[list[str]]]:
    header = ["blocks", "class", "activations", "if checkpointed", "saves", "recompute", "as configured", "plan"]
    rows = []
    for group in _groups(m.blocks):
        b, n = group[0], len(group)
        each = " each" if n > 1 else ""
        rows.append([
            _span([g.name for g in group]) or "(model)", b.cls + (f" x{n}" if n > 1 else ""),
            human_bytes(b.activation_bytes) + each, human_bytes(b.checkpointed_bytes),
            human_bytes(b.saving_bytes), f"{human_flops(b.recompute_flops)} ({b.recompute_fraction:.1%})",
            f"{b.configured}, {human_bytes(b.configured_bytes)}", "checkpoint" if b.in_plan else "-",
        ])
    rows.append(["(outside blocks)", "", human_bytes(m.other_bytes), "", "", "", "", ""])
    return header, rows


def _headline(m: Measurement) -> str:
    p = m.probe
    names = [b.name for b in m.blocks]
    what = {"repeated": "repeated blocks", "top-level": "top-level children (no repeated blocks)",
            "whole-model": "the whole model (no children)"}.get(p.detection, p.detection)
    return (f"{p.model_class} from {m.subject}: {len(m.blocks)} {what} {_span(names)}; "
            f"{p.parameters:,} parameters ({human_bytes(p.parameter_bytes)}), {p.dtype}, "
            f"{'training' if p.training else 'eval'} mode; batch {', '.join(p.batch)}; "
            f"on {p.device}, torch {p.torch}" + (f", transformers {p.transformers}" if p.transformers else "")
            + (f", attention {p.attention}" if p.attention else ""))


def _notes(m: Measurement) -> list[str]:
    notes = []
    if m.probe.device == "meta" and m.probe.attention == "sdpa":
        notes.append("Note: on the meta device scaled_dot_product_attention takes its math path, which saves the "
                     "attention probabilities (batch x heads x seq x seq); the flash/memory-efficient kernels of a "
                     "CPU or GPU save less. Measure with --device cpu/cuda, or attn_implementation='eager' for the "
                     "math path everywhere.")
    return notes


def _configuration_lines(m: Measurement) -> list[list[str]]:
    none = m.configuration("none").activation_bytes
    out = []
    for c in m.configurations:
        out.append([CONFIG_LABELS[c.name], human_bytes(c.activation_bytes),
                    f"{fraction(c.activation_bytes, none):.0%}", f"{human_flops(c.recompute_flops)} "
                    f"(+{c.recompute_fraction:.1%} of the step)", f"{len(c.blocks)} of {len(m.blocks)} blocks"
                    + (" (transformers' call)" if c.how == "hf" else "")])
    return out


def _plan_line(m: Measurement) -> str:
    plan = m.plan
    budget = f" for a budget of {human_bytes(plan.budget_bytes)}" if plan.budget_bytes is not None else \
        " (most memory per recomputed FLOP; --budget to fit a size)"
    if not plan.blocks:
        return f"Plan{budget}: nothing to checkpoint."
    verdict = "" if plan.fits else "; even every block checkpointed does not fit"
    return (f"Plan{budget}: checkpoint {len(plan.blocks)} of {len(m.blocks)} blocks "
            f"({_span([m.blocks[b].name for b in plan.blocks])}){verdict}")


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in [header, *rows]]


def render_text(m: Measurement) -> str:
    out = [_headline(m), ""]
    header, rows = _rows(m)
    out += _table(header, rows)
    out += ["", "Activation memory held for backward (parameters, gradients and optimizer state not included):"]
    out += ["  " + line for line in _table(["configuration", "activations", "vs none", "recompute", "checkpointed"],
                                           _configuration_lines(m))]
    if m.probe.cuda:
        out += ["", f"Measured on {m.probe.cuda_name}:"]
        out += ["  " + f"{r.label.replace('_', ' ')}: peak {human_bytes(r.peak_bytes)}, step {r.step_seconds * 1000:.1f} ms"
                for r in m.probe.cuda]
    out += ["", *_notes(m)] if _notes(m) else []
    out += ["", _plan_line(m)]
    if m.plan.code:
        out += ["    " + line if line else "" for line in m.plan.code.splitlines()]
    out += [""]
    if m.findings:
        out += ["Findings:"]
        out += [f"  {f.rule} ({f.severity.value}): {f.message}" for f in m.findings]
    else:
        out += ["Findings: none."]
    return "\n".join(out) + "\n"


def render_markdown(m: Measurement) -> str:
    def md_table(header: list[str], rows: list[list[str]]) -> list[str]:
        return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + \
            ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]

    header, rows = _rows(m)
    out = ["# Checkpointing measurement", "", _headline(m), "", "## Blocks", ""]
    out += md_table(header, rows)
    out += ["", "## Configurations", "", "Activation memory held for backward (parameters, gradients and "
            "optimizer state not included).", ""]
    out += md_table(["configuration", "activations", "vs none", "recompute", "checkpointed"], _configuration_lines(m))
    if m.probe.cuda:
        out += ["", f"Measured on {m.probe.cuda_name}:", ""]
        out += [f"- {r.label.replace('_', ' ')}: peak {human_bytes(r.peak_bytes)}, step {r.step_seconds * 1000:.1f} ms"
                for r in m.probe.cuda]
    out += ["", *_notes(m)] if _notes(m) else []
    out += ["", "## Plan", "", _plan_line(m)]
    if m.plan.code:
        out += ["", "```python", m.plan.code, "```"]
    out += ["", "## Findings", ""]
    out += [f"- **`{f.rule}`** ({f.severity.value}): {f.message}" for f in m.findings] or ["None."]
    return "\n".join(out) + "\n"


def call_markdown(m: Measurement, path: str, line: int, end_line: int, kind: str) -> str:
    """The last measured numbers for the blocks a checkpointing call in the source covers (the hover).

    `kind`: "checkpoint" (a call site: the regions measured at those lines), "hf" (transformers' flag:
    its layers), or "wrapper" (checkpoint_wrapper / apply_activation_checkpointing: the blocks measured
    as checkpointed)."""
    head = f"**Last measurement** ({m.subject}, {m.probe.device})"
    if kind == "checkpoint":
        here = [r for r in m.regions if _at(r.where, path, line, end_line)]
        if not here:
            return f"{head}: this call did not run in the measured forward."
        lines = [head + ":", ""]
        for r in here:
            covered = _span(list(r.modules)) or r.function
            state = "engaged" if r.engaged == r.calls else f"engaged in {r.engaged} of {r.calls} calls"
            lines.append(f"- `{covered}`: {r.calls} call(s), {state}; saves {human_bytes(r.saving_bytes)} of "
                         f"{human_bytes(r.freed_bytes)} it frees, recomputes {human_flops(r.recompute_flops)} "
                         f"(+{fraction(r.recompute_flops, m.probe.step_flops):.1%} of the step)")
        return "\n".join(lines + _finding_lines(m))
    blocks = [b for b in m.blocks if (b.configured != "no" if kind == "hf" else b.configured == "checkpointed")]
    configured, none = m.configuration("as-configured"), m.configuration("none")
    text = [f"{head}: {len(blocks)} of {len(m.blocks)} blocks checkpointed as configured "
            f"({_span([b.name for b in blocks]) or 'none'}); activation memory {human_bytes(configured.activation_bytes)} "
            f"(without checkpointing {human_bytes(none.activation_bytes)}), recompute "
            f"+{configured.recompute_fraction:.1%} of the step"]
    return "\n".join(text + _finding_lines(m))


def _at(where: str, path: str, line: int, end_line: int) -> bool:
    file, _, number = where.rpartition(":")
    if not number.isdigit():
        return False
    try:
        same = os.path.samefile(file, path)
    except OSError:
        same = os.path.abspath(file) == os.path.abspath(path)
    return same and line <= int(number) <= end_line


def _finding_lines(m: Measurement) -> list[str]:
    return [""] + [f"- `{f.rule}`: {f.message}" for f in m.findings] if m.findings else []
