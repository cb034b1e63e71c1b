/**
 * The report of `rootrank.measure`: the blocks as a chart (activation memory per block without
 * checkpointing and as configured, checkpointed or not, recompute cost), the configurations side by side
 * (today's beside the plan), the plan's code and the findings. Pure functions of the server's JSON
 * (schema rootrank.measure/1), so they are tested without VS Code.
 */
import { escapeHtml, renderMarkdown } from './markdown';

export interface MeasureBlock {
  index: number; name: string; cls: string; activation_bytes: number; checkpointed_bytes: number;
  saving_bytes: number; configured_bytes: number; configured: string; recompute_flops: number;
  recompute_fraction: number; in_plan: boolean;
}
export interface MeasureConfiguration { activation_bytes: number; recompute_flops: number; recompute_fraction: number; blocks: number[]; how?: string }
export interface MeasureResult {
  schema: string;
  subject: string;
  model: { class: string; parameters: number; dtype: string | null };
  environment: { device: string; torch: string };
  blocks: MeasureBlock[];
  other_bytes: number;
  configurations: Record<string, MeasureConfiguration>;
  plan: { blocks: string[]; budget_bytes: number | null; fits: boolean; how: string; code: string };
  findings: { id: string; severity: string; message: string }[];
  markdown?: string;
}

export function toMeasureResult(value: unknown): MeasureResult {
  const r = value as Partial<MeasureResult> | null;
  if (!r || r.schema !== 'rootrank.measure/1' || !Array.isArray(r.blocks) || !r.configurations || !r.plan) {
    throw new Error('the server answered rootrank.measure with something that is not a rootrank.measure/1 result');
  }
  return r as MeasureResult;
}

export function humanBytes(value: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = value;
  let i = 0;
  while (Math.abs(v) >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return i === 0 ? `${v.toFixed(0)} B` : `${v.toFixed(2)} ${units[i]}`;
}

/** How a configuration is applied (and so counted): the server's `how` field. */
const HOW: Record<string, string> = { 'hf': "transformers' enable call", 'apply_activation_checkpointing': 'apply_activation_checkpointing', 'as-configured': "the user's code", 'none': '' };
const LABELS: Record<string, string> = { 'none': 'no checkpointing', 'as-configured': 'as configured (today)', 'all-blocks': 'every block', 'plan': 'plan' };

/** One SVG row per block: the bar without checkpointing, and over it the bar as configured. */
export function renderBlockChart(r: MeasureResult): string {
  const max = Math.max(1, ...r.blocks.map(b => b.activation_bytes));
  const rowHeight = 18;
  const labelWidth = 160;
  const barWidth = 360;
  const rows = r.blocks.map((b, i) => {
    const y = i * rowHeight;
    const full = Math.max(1, Math.round(barWidth * b.activation_bytes / max));
    const today = Math.max(1, Math.round(barWidth * b.configured_bytes / max));
    const cls = b.configured === 'checkpointed' ? 'ckpt' : b.configured === 'no' ? 'bare' : 'odd';
    const plan = b.in_plan ? 'plan' : '';
    return `<g class="block ${cls}" data-block="${b.index}">` +
      `<text x="0" y="${y + 13}" class="label">${escapeHtml(b.name || '(model)')}</text>` +
      `<rect x="${labelWidth}" y="${y + 2}" width="${full}" height="14" class="none"><title>without checkpointing ${humanBytes(b.activation_bytes)}</title></rect>` +
      `<rect x="${labelWidth}" y="${y + 5}" width="${today}" height="8" class="today ${cls}"><title>as configured (${escapeHtml(b.configured)}) ${humanBytes(b.configured_bytes)}</title></rect>` +
      `<text x="${labelWidth + barWidth + 8}" y="${y + 13}" class="value">${humanBytes(b.configured_bytes)} / ${humanBytes(b.activation_bytes)}` +
      ` · recompute +${(100 * b.recompute_fraction).toFixed(1)}%${plan ? ' · in plan' : ''}</text></g>`;
  });
  const height = r.blocks.length * rowHeight + 4;
  return `<svg class="chart" role="img" aria-label="activation memory per block" width="${labelWidth + barWidth + 300}" height="${height}" ` +
    `viewBox="0 0 ${labelWidth + barWidth + 300} ${height}">${rows.join('')}</svg>`;
}

/** Today's configuration beside the plan (and the two extremes): activation memory and recompute. */
export function renderConfigurations(r: MeasureResult): string {
  const none = r.configurations['none']?.activation_bytes || 1;
  const rows = ['none', 'as-configured', 'all-blocks', 'plan'].map(name => {
    const c = r.configurations[name];
    if (!c) return '';
    const width = Math.max(1, Math.round(300 * c.activation_bytes / none));
    return `<tr data-config="${name}"><th>${LABELS[name]}</th><td>${humanBytes(c.activation_bytes)}</td>` +
      `<td><svg width="300" height="12"><rect x="0" y="1" width="${width}" height="10" class="cfg ${name}"/></svg></td>` +
      `<td>+${(100 * c.recompute_fraction).toFixed(1)}% FLOPs</td><td>${c.blocks.length} of ${r.blocks.length} blocks</td>` +
      `<td>${c.how ? escapeHtml(HOW[c.how] ?? c.how) : ''}</td></tr>`;
  });
  return `<table class="configs">${rows.join('')}</table>`;
}

export function renderMeasureReport(r: MeasureResult, ctx: { nonce: string; cspSource: string }): string {
  const csp = `default-src 'none'; img-src ${ctx.cspSource}; style-src 'nonce-${ctx.nonce}'; script-src 'nonce-${ctx.nonce}'`;
  const findings = r.findings.length
    ? `<ul>${r.findings.map(f => `<li><code>${escapeHtml(f.id)}</code> <span class="sev sev-${escapeHtml(f.severity)}">${escapeHtml(f.severity)}</span> ${escapeHtml(f.message)}</li>`).join('')}</ul>`
    : '<p>None.</p>';
  const budget = r.plan.budget_bytes !== null ? ` for a budget of ${humanBytes(r.plan.budget_bytes)}${r.plan.fits ? '' : ' (does not fit)'}` : '';
  const code = r.plan.code ? `<pre><code>${escapeHtml(r.plan.code)}</code></pre>` : '';
  return `<!DOCTYPE html><html><head><meta charset="utf-8"><meta http-equiv="Content-Security-Policy" content="${csp}">` +
    `<style nonce="${ctx.nonce}">body{font-family:var(--vscode-font-family);color:var(--vscode-foreground)}` +
    `.chart .label,.chart .value{fill:var(--vscode-foreground);font-size:12px}.none{fill:var(--vscode-editorWidget-border,#888);opacity:.45}` +
    `.today.ckpt{fill:var(--vscode-charts-green,#3a3)}.today.bare{fill:var(--vscode-charts-red,#c33)}.today.odd{fill:var(--vscode-charts-yellow,#cc3)}` +
    `.cfg{fill:var(--vscode-charts-blue,#36c)}.cfg.plan{fill:var(--vscode-charts-green,#3a3)}.configs th{text-align:left;padding-right:1em}</style></head><body>` +
    `<p class="eyebrow">Checkpointing measurement</p><h1>${escapeHtml(r.model.class)}</h1>` +
    `<p class="meta">${escapeHtml(r.subject)} · ${r.blocks.length} blocks · ${escapeHtml(r.environment.device)} · torch ${escapeHtml(r.environment.torch)}</p>` +
    `<section id="blocks"><h2>Activation memory per block</h2><p class="muted">grey: without checkpointing; ` +
    `green: checkpointed today, red: not checkpointed, yellow: partly or not engaged</p>${renderBlockChart(r)}` +
    `<p class="muted">outside blocks: ${humanBytes(r.other_bytes)}</p></section>` +
    `<section id="configurations"><h2>Today and the plan</h2>${renderConfigurations(r)}</section>` +
    `<section id="plan"><h2>Plan${escapeHtml(budget)}</h2><p>${r.plan.blocks.length ? `checkpoint ${r.plan.blocks.length} of ${r.blocks.length} blocks` : 'nothing to checkpoint'}</p>${code}</section>` +
    `<section id="findings"><h2>Findings</h2>${findings}</section>` +
    (r.markdown ? `<details><summary>Markdown report</summary>${renderMarkdown(r.markdown)}</details>` : '') +
    `</body></html>`;
}
