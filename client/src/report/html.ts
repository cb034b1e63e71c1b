/**
 * The report webview's HTML, built from a diagnosis. Pure (no vscode import) so it is unit-tested.
 * Security: a strict CSP (default-src 'none'; one nonce for the stylesheet and the script; no remote content),
 * every server or log string escaped. The script only posts messages; the extension decides what to do.
 */
import { escapeHtml, isSafeUrl, renderInline, renderMarkdown } from './markdown';
import { renderTimeline } from './timeline';
import type { Collateral, Diagnosis } from '../types';

export interface ReportContext {
  nonce: string;
  /** The webview's `cspSource` (allowed for images only; the report loads none today). */
  cspSource: string;
  /** Where the text came from, e.g. "selection in train.log" or "terminal: python train.py (exit 1)". */
  origin: string;
  /** Whether evidence lines can be revealed in an editor. */
  canReveal: boolean;
  /** Kept with the webview (vscode.setState) so the report survives a window reload. */
  state?: unknown;
}

/** JSON that is safe inside an HTML element: no `<`, `>` or `&` that could close or open markup. */
export function jsonForHtml(value: unknown): string {
  return JSON.stringify(value).replace(/</g, '\\u003c').replace(/>/g, '\\u003e').replace(/&/g, '\\u0026');
}

/** "0-3, 5, 7" */
export function compressRanks(ranks: number[]): string {
  const sorted = [...new Set(ranks)].sort((a, b) => a - b);
  const out: string[] = [];
  for (let i = 0; i < sorted.length; i++) {
    const start = sorted[i] as number;
    let end = start;
    while (i + 1 < sorted.length && sorted[i + 1] === end + 1) end = sorted[++i] as number;
    out.push(end > start + 1 ? `${start}–${end}` : end === start + 1 ? `${start}, ${end}` : `${start}`);
  }
  return out.join(', ');
}

export interface CollateralGroup { rule: string; title: string; ranks: number[]; firstLine: number }

export function groupCollateral(items: Collateral[]): CollateralGroup[] {
  const groups = new Map<string, CollateralGroup>();
  for (const c of items) {
    const g = groups.get(c.rule) ?? { rule: c.rule, title: c.title ?? c.rule, ranks: [], firstLine: c.line };
    g.ranks.push(c.rank);
    g.firstLine = Math.min(g.firstLine, c.line);
    groups.set(c.rule, g);
  }
  return [...groups.values()].sort((a, b) => a.firstLine - b.firstLine);
}

export function makeNonce(random: () => number = Math.random): string {
  const chars = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  let s = '';
  for (let i = 0; i < 32; i++) s += chars.charAt(Math.floor(random() * chars.length));
  return s;
}

export function contentSecurityPolicy(ctx: Pick<ReportContext, 'nonce' | 'cspSource'>): string {
  return [
    "default-src 'none'",
    `img-src ${ctx.cspSource} data:`,
    `style-src 'nonce-${ctx.nonce}'`,
    `script-src 'nonce-${ctx.nonce}'`,
  ].join('; ');
}

function lineButton(line: number, label: string, ctx: ReportContext): string {
  return ctx.canReveal
    ? `<a href="#" class="lineref" data-line="${line}" title="Show line ${line} in the editor">${escapeHtml(label)}</a>`
    : `<span class="lineref">${escapeHtml(label)}</span>`;
}

function headline(d: Diagnosis): string {
  const rc = d.root_cause;
  if (!rc) {
    return d.candidates.length
      ? '<h1>No single root cause: candidates below</h1>'
      : '<h1>No known failure found</h1>';
  }
  const where = rc.rank !== null
    ? `<span class="rank-badge" title="The rank whose failure came first">initiating rank ${rc.rank}</span>`
    : '';
  const host = rc.host ? ` <span class="muted">on ${escapeHtml(rc.host)}</span>` : '';
  return `<p class="eyebrow">Root cause</p><h1>${escapeHtml(rc.title)}</h1>` +
    `<p class="meta">${where}${host} <span class="sev sev-${escapeHtml(rc.severity)}">${escapeHtml(rc.severity)}</span>` +
    ` <code>${escapeHtml(rc.rule)}</code></p>`;
}

function section(id: string, title: string, body: string): string {
  return body ? `<section id="${id}"><h2>${escapeHtml(title)}</h2>${body}</section>` : '';
}

export function renderReport(d: Diagnosis, ctx: ReportContext): string {
  const rc = d.root_cause;
  const body: string[] = [];
  body.push(`<header>${headline(d)}<p class="origin muted">${escapeHtml(ctx.origin)}</p>` +
    `<div class="toolbar"><button data-action="copyMarkdown">Copy as Markdown</button></div></header>`);

  if (rc) {
    const decided = rc.decided_by ? `<p class="muted">Decided by: ${escapeHtml(rc.decided_by)}</p>` : '';
    const conf = rc.confidence
      ? `<p class="muted">Confidence: failure ${escapeHtml(rc.confidence.failure.level)} (${escapeHtml(rc.confidence.failure.reason)}); ` +
        `rank ${escapeHtml(rc.confidence.rank.level)} (${escapeHtml(rc.confidence.rank.reason)})</p>`
      : '';
    body.push(section('why', 'Why', `<p>${renderInline(rc.why)}</p>${decided}${conf}`));
  } else if (d.findings.length === 0 && d.candidates.length === 0) {
    body.push(section('why', 'Nothing recognised',
      '<p>rootrank found no failure it knows in this text. Select the whole traceback or log (all ranks) and try again.</p>'));
  }

  const svg = renderTimeline(d, { clickable: ctx.canReveal });
  if (svg) {
    const legend = '<p class="legend"><span class="key cause"></span>initiating failure ' +
      '<span class="key symptom"></span>collateral symptom <span class="key context"></span>context</p>';
    body.push(section('timeline', 'Timeline per rank', `<div class="figure">${svg}</div>${legend}`));
  }

  if (rc && rc.evidence.length) {
    const items = rc.evidence.map(ev => {
      const who = ev.rank !== null ? `rank ${ev.rank}` : '';
      return `<li>${lineButton(ev.line, `line ${ev.line}`, ctx)} <span class="muted">${escapeHtml(who)}</span>` +
        `<pre class="evidence"><code>${escapeHtml(ev.text)}</code></pre></li>`;
    }).join('');
    body.push(section('evidence', 'Evidence', `<ul class="evidence-list">${items}</ul>`));
  }

  const groups = groupCollateral(d.collateral);
  if (groups.length) {
    const items = groups.map(g => `<li><strong>rank${g.ranks.length > 1 ? 's' : ''} ${escapeHtml(compressRanks(g.ranks))}</strong>: ` +
      `${escapeHtml(g.title)} <code>${escapeHtml(g.rule)}</code> · first at ${lineButton(g.firstLine, `line ${g.firstLine}`, ctx)}</li>`).join('');
    body.push(section('collateral', 'Collateral (consequences, not causes)', `<ul>${items}</ul>`));
  }

  if (d.candidates.length) {
    const items = d.candidates.map(c => `<li><strong>rank ${c.rank}</strong>: ${escapeHtml(c.title ?? c.rule)} ` +
      `<code>${escapeHtml(c.rule)}</code><br><span class="muted">${renderInline(c.why)}</span></li>`).join('');
    body.push(section('candidates', 'Candidates', `<ul>${items}</ul>`));
  }

  if (!rc && d.findings.length) {
    const items = d.findings.map(f => `<li>${lineButton(f.line, `line ${f.line}`, ctx)} ${escapeHtml(f.title ?? f.rule)} ` +
      `<code>${escapeHtml(f.rule)}</code> <span class="muted">${escapeHtml(f.role)}${f.rank !== null ? `, rank ${f.rank}` : ''}` +
      `${f.count > 1 ? `, ×${f.count}` : ''}</span></li>`).join('');
    body.push(section('findings', 'Findings', `<ul>${items}</ul>`));
  }

  if (rc?.fix) body.push(section('fix', 'Fix', `<div class="markdown">${renderMarkdown(rc.fix)}</div>`));

  if (rc?.verify) {
    body.push(section('verify', 'Verify',
      `<pre class="code verify"><code>${escapeHtml(rc.verify)}</code></pre>` +
      '<div class="toolbar"><button data-action="copyVerify">Copy</button>' +
      '<button data-action="runVerify" class="secondary" title="Asks before running">Run in terminal…</button></div>'));
  }

  const refs = (rc?.references ?? []).filter(isSafeUrl);
  if (refs.length) {
    const items = refs.map((u, i) => `<li><a href="#" class="link" data-href="${escapeHtml(u)}">${escapeHtml(u)}</a>` +
      `${i === 0 ? ' <span class="muted">(entry docs)</span>' : ''}</li>`).join('');
    body.push(section('references', 'References', `<ul>${items}</ul>`));
  }

  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${escapeHtml(contentSecurityPolicy(ctx))}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>rootrank report</title>
<style nonce="${ctx.nonce}">${STYLE}</style>
</head>
<body>
<main>
${body.join('\n')}
</main>
${ctx.state === undefined ? '' : `<script type="application/json" id="rootrank-state" nonce="${ctx.nonce}">${jsonForHtml(ctx.state)}</script>`}
<script nonce="${ctx.nonce}">${SCRIPT}</script>
</body>
</html>`;
}

const STYLE = `
:root { color-scheme: light dark; }
body { font-family: var(--vscode-font-family); font-size: var(--vscode-font-size); color: var(--vscode-foreground);
  background: var(--vscode-editor-background); line-height: 1.5; padding: 0 20px 40px; }
main { max-width: 920px; }
h1 { font-size: 1.6em; margin: 0.1em 0 0.2em; font-weight: 600; }
h2 { font-size: 1.05em; text-transform: uppercase; letter-spacing: 0.04em; color: var(--vscode-descriptionForeground);
  border-bottom: 1px solid var(--vscode-panel-border, var(--vscode-widget-border, transparent)); padding-bottom: 3px; margin-top: 1.6em; }
h4, h5, h6 { font-size: 1em; margin: 1em 0 0.3em; }
header { padding-top: 16px; }
.eyebrow { margin: 0; text-transform: uppercase; font-size: 0.8em; letter-spacing: 0.08em; color: var(--vscode-errorForeground); font-weight: 600; }
.meta { margin: 0.2em 0; display: flex; gap: 8px; align-items: center; flex-wrap: wrap; }
.muted, .origin { color: var(--vscode-descriptionForeground); }
.origin { margin: 0.3em 0; font-size: 0.92em; }
.rank-badge { background: var(--vscode-inputValidation-errorBackground, var(--vscode-badge-background)); color: var(--vscode-foreground);
  border: 1px solid var(--vscode-inputValidation-errorBorder, var(--vscode-errorForeground)); border-radius: 10px; padding: 1px 10px; font-weight: 600; }
.sev { border-radius: 3px; padding: 0 6px; font-size: 0.85em; border: 1px solid currentColor; }
.sev-error { color: var(--vscode-errorForeground); }
.sev-warning { color: var(--vscode-editorWarning-foreground); }
.sev-info { color: var(--vscode-editorInfo-foreground); }
code { font-family: var(--vscode-editor-font-family); font-size: 0.95em; background: var(--vscode-textCodeBlock-background); padding: 0 3px; border-radius: 3px; }
pre.code, pre.evidence { background: var(--vscode-textCodeBlock-background); padding: 8px 10px; border-radius: 4px; overflow-x: auto;
  border: 1px solid var(--vscode-widget-border, transparent); margin: 4px 0 8px; }
pre code { background: none; padding: 0; white-space: pre; }
pre.evidence code, pre.verify code { white-space: pre-wrap; word-break: break-word; }
ul { padding-left: 1.3em; }
ul.evidence-list { list-style: none; padding-left: 0; }
a, .link, .lineref { color: var(--vscode-textLink-foreground); text-decoration: none; cursor: pointer; }
a:hover { text-decoration: underline; color: var(--vscode-textLink-activeForeground); }
a:focus-visible, button:focus-visible, .event:focus-visible { outline: 1px solid var(--vscode-focusBorder); outline-offset: 2px; }
.toolbar { display: flex; gap: 8px; margin: 8px 0; }
button { font-family: inherit; font-size: inherit; background: var(--vscode-button-background); color: var(--vscode-button-foreground);
  border: 1px solid var(--vscode-button-border, transparent); border-radius: 2px; padding: 4px 12px; cursor: pointer; }
button:hover { background: var(--vscode-button-hoverBackground); }
button.secondary { background: var(--vscode-button-secondaryBackground); color: var(--vscode-button-secondaryForeground); }
button.secondary:hover { background: var(--vscode-button-secondaryHoverBackground); }
.figure { overflow-x: auto; border: 1px solid var(--vscode-widget-border, var(--vscode-panel-border, transparent)); border-radius: 4px; padding: 6px 4px 2px; }
svg.timeline { display: block; min-width: 320px; max-width: 1100px; font-family: var(--vscode-font-family); font-size: 12px; }
svg .band { fill: var(--vscode-editor-foreground); opacity: 0.04; }
svg text { fill: var(--vscode-foreground); }
svg text.row.initiating { fill: var(--vscode-errorForeground); font-weight: 700; }
svg text.tick { fill: var(--vscode-descriptionForeground); font-size: 11px; }
svg .lane { stroke: var(--vscode-descriptionForeground); stroke-opacity: 0.35; stroke-width: 1; }
svg .axis { stroke: var(--vscode-descriptionForeground); stroke-width: 1; }
svg .onset { stroke: var(--vscode-errorForeground); stroke-width: 1.5; stroke-dasharray: 4 3; }
svg .dot.cause { fill: var(--vscode-errorForeground); }
svg .halo { fill: none; stroke: var(--vscode-errorForeground); stroke-width: 2; }
svg .dot.symptom { fill: var(--vscode-editorWarning-foreground); }
svg .dot.context { fill: var(--vscode-descriptionForeground); }
svg .event { cursor: pointer; }
svg .event:hover .dot { stroke: var(--vscode-focusBorder); stroke-width: 2; }
.legend { font-size: 0.9em; color: var(--vscode-descriptionForeground); display: flex; gap: 6px; align-items: center; flex-wrap: wrap; }
.key { display: inline-block; width: 10px; height: 10px; margin-left: 8px; }
.key.cause { background: var(--vscode-errorForeground); border-radius: 50%; }
.key.symptom { background: var(--vscode-editorWarning-foreground); transform: rotate(45deg); width: 8px; height: 8px; }
.key.context { background: var(--vscode-descriptionForeground); border-radius: 50%; width: 7px; height: 7px; }
.note { font-size: 0.9em; color: var(--vscode-descriptionForeground); }
body.vscode-high-contrast .figure, body.vscode-high-contrast pre { border-color: var(--vscode-contrastBorder); }
body.vscode-high-contrast svg .lane { stroke-opacity: 1; }
`;

const SCRIPT = `
(function () {
  const vscode = acquireVsCodeApi();
  const state = document.getElementById('rootrank-state');
  if (state) vscode.setState(JSON.parse(state.textContent));
  function act(target) {
    const el = target.closest('[data-line],[data-action],[data-href]');
    if (!el) return false;
    if (el.dataset.action) vscode.postMessage({ type: el.dataset.action });
    else if (el.dataset.href) vscode.postMessage({ type: 'open', href: el.dataset.href });
    else if (el.dataset.line) vscode.postMessage({ type: 'reveal', line: Number(el.dataset.line) });
    return true;
  }
  document.addEventListener('click', function (e) { if (act(e.target)) e.preventDefault(); });
  document.addEventListener('keydown', function (e) {
    if ((e.key === 'Enter' || e.key === ' ') && e.target.closest && e.target.closest('svg [data-line]')) { act(e.target); e.preventDefault(); }
  });
  // The timeline is redrawn by the extension for the figure's real width, so its text is never scaled.
  const figure = document.querySelector('.figure');
  let sent = 0, timer;
  function measure() {
    if (!figure) return;
    const width = Math.floor(figure.clientWidth) - 10;
    if (width > 0 && Math.abs(width - sent) > 8) { sent = width; vscode.postMessage({ type: 'resize', width: width }); }
  }
  window.addEventListener('resize', function () { clearTimeout(timer); timer = setTimeout(measure, 120); });
  window.addEventListener('message', function (e) {
    if (figure && e.data && e.data.type === 'timeline' && typeof e.data.svg === 'string') figure.innerHTML = e.data.svg;
  });
  measure();
})();
`;
