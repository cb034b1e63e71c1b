"""A watch's notices as terminal text: a cause found while the job runs, a stall with the hung rank,
the final diagnosis; each marked off from the job's own output by rule lines."""

from __future__ import annotations

import shutil

from rootrank.model import Diagnosis
from rootrank.redact import redact
from rootrank.render.common import where
from rootrank.render.text import render_text
from rootrank.watch.records import RankStack, StallReport

SHOWN_FRAMES = 3


def _rule(title: str, color: bool) -> str:
    width = min(shutil.get_terminal_size((100, 24)).columns, 100)
    head = f"── rootrank: {title} "
    line = head + "─" * max(4, width - len(head))
    return f"\x1b[35;1m{line}\x1b[0m" if color else line


def _end(color: bool) -> str:
    width = min(shutil.get_terminal_size((100, 24)).columns, 100)
    return f"\x1b[35;1m{'─' * width}\x1b[0m" if color else "─" * width


def cause_notice(d: Diagnosis, color: bool = False) -> str:
    """A few lines: who failed with what, the line that shows it, the fix's first line."""
    root = d.root_cause
    if root is None:
        return ""
    lines = [_rule("cause found while the job runs", color),
             f"{where(root.rank, root.host)}: {root.title}  [{root.rule}]"]
    for e in root.evidence[:2]:
        lines.append(f"  line {e.line}: {redact(e.text)[:240]}")
    fix = next((line.strip() for line in root.fix.splitlines() if line.strip()), "")
    if fix:
        lines.append(f"fix: {redact(fix)[:300]}")
    lines.append(_end(color))
    return "\n".join(lines) + "\n"


def _stack_line(stack: RankStack) -> str:
    if stack.error:
        return f"  {stack.label:>8}  (no stack: {stack.error})"
    frames = " <- ".join(f"{f.function} ({f.where})" for f in stack.frames[:SHOWN_FRAMES])
    user = stack.user_frame
    if user is not None and user not in stack.frames[:SHOWN_FRAMES]:
        frames += f" ... {user.function} ({user.where})"
    return f"  {stack.label:>8}  {frames}"


def stall_notice(report: StallReport, kill_on_stall: bool, color: bool = False) -> str:
    lines = [_rule("stall", color), report.reason]
    if report.problem:
        lines.append(report.problem)
    if report.verdict:
        lines.append(f"hung: {report.verdict}")
    shown = list(report.hung) + [s for s in report.stacks if s not in report.hung]
    lines.extend(_stack_line(s) for s in shown[:16])
    if len(shown) > 16:
        lines.append(f"  ... {len(shown) - 16} more ranks in the stacks file")
    if report.stacks_path:
        lines.append(f"stacks: {report.stacks_path}")
    lines.append("stopping the job (--kill-on-stall)" if kill_on_stall else
                 "the job goes on; rootrank keeps watching (--kill-on-stall stops a stalled job)")
    lines.append(_end(color))
    return "\n".join(lines) + "\n"


def final_notice(d: Diagnosis, exit_code: int | None, interrupted: bool, stalls: list[StallReport],
                 color: bool = False) -> str:
    """The diagnosis `rootrank diagnose` gives for the same output, marked off; the last stall's verdict."""
    if interrupted:
        title = "interrupted; what the output shows"
    elif exit_code is None:
        title = "diagnosis of the followed files"
    else:
        title = f"the job exited with status {exit_code}"
    stall = ""
    if stalls:
        last = stalls[-1]
        stall = f"Stalled       {last.verdict or last.problem or last.reason}\n"
        if last.stacks_path:
            stall += f"              stacks: {last.stacks_path}\n"
    return f"{_rule(title, color)}\n{stall}{render_text(d, color=color)}{_end(color)}\n"
