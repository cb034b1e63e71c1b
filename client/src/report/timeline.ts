/**
 * The per-rank timeline picture: an inline SVG drawn from the diagnosis' `timeline`. One row per rank (plus a
 * "launcher" row for events without a rank), log order or time on the horizontal axis, the initiating failure
 * marked, collateral symptoms after it. Colours come from CSS classes (the report's stylesheet maps them to
 * VS Code theme variables), so the picture follows light, dark and high-contrast themes. Pure: no DOM, no vscode.
 */
import { escapeHtml } from './markdown';
import { runsCount, runsFirst, runsHave } from '../types';
import type { Diagnosis, TimelineEvent } from '../types';

export interface TimelineOptions {
  width?: number;
  maxRows?: number;
  /** Whether markers carry data-line (clicking reveals the log line). */
  clickable?: boolean;
}

export interface TimelineLayout {
  rows: (number | null)[];
  hiddenRows: number;
  axis: 'time' | 'order';
  min: number;
  max: number;
}

const ROW = 22;
const LABEL = 72;
const PAD_RIGHT = 16;
const TOP = 10;
const AXIS = 30;

/** Which rows and which horizontal scale the picture uses. */
export function layoutTimeline(d: Pick<Diagnosis, 'timeline' | 'ranks_seen' | 'root_cause'>, maxRows = 32): TimelineLayout {
  const events = d.timeline;
  const initiating = d.root_cause?.rank ?? null;
  // ranks_seen may stand for a million ranks (as runs): only the ranks with events, the initiating one
  // and, when few, the quiet ones become rows; the rest is counted, never listed
  const extra = new Set<number>();
  for (const e of events) {
    if (e.rank !== null && !runsHave(d.ranks_seen, e.rank)) extra.add(e.rank);
  }
  const total = runsCount(d.ranks_seen) + extra.size;
  let rows: (number | null)[];
  let hiddenRows = 0;
  if (total <= maxRows) {
    rows = [...runsFirst(d.ranks_seen, total), ...extra].sort((a, b) => a - b);
  } else {
    // keep the initiating rank and the ranks with events; drop quiet ranks first
    const withEvents = new Set(events.map(e => e.rank));
    const keep = new Set<number>([...withEvents].filter((r): r is number => r !== null));
    if (initiating !== null && runsHave(d.ranks_seen, initiating)) keep.add(initiating);
    rows = [...keep].sort((a, b) => a - b).slice(0, maxRows);
    hiddenRows = total - rows.length;
  }
  if (events.some(e => e.rank === null)) rows.push(null);
  const axis = events.length > 0 && events.every(e => typeof e.time === 'number') ? 'time' : 'order';
  const values = events.map(e => (axis === 'time' ? (e.time as number) : e.order));
  const min = values.length ? Math.min(...values) : 0;
  const max = values.length ? Math.max(...values) : 1;
  return { rows, hiddenRows, axis, min, max };
}

function rowLabel(rank: number | null): string {
  return rank === null ? 'launcher' : `rank ${rank}`;
}

function fmt(n: number): string {
  return Number.isInteger(n) ? String(n) : n.toFixed(2);
}

function isInitiating(e: TimelineEvent, d: Pick<Diagnosis, 'root_cause'>): boolean {
  const rc = d.root_cause;
  return !!rc && e.role === 'cause' && e.rank === rc.rank && e.line === rc.line;
}

/** The SVG markup (empty string when there is nothing to draw). */
export function renderTimeline(d: Pick<Diagnosis, 'timeline' | 'ranks_seen' | 'root_cause'>, options: TimelineOptions = {}): string {
  const events = d.timeline;
  if (events.length === 0) return '';
  const width = options.width ?? 520;
  const lay = layoutTimeline(d, options.maxRows);
  const plotLeft = LABEL;
  const plotRight = width - PAD_RIGHT;
  const height = TOP + lay.rows.length * ROW + AXIS;
  const span = lay.max - lay.min;
  const x = (v: number) => (span <= 0 ? (plotLeft + plotRight) / 2 : plotLeft + ((v - lay.min) / span) * (plotRight - plotLeft));
  const y = (rank: number | null) => TOP + lay.rows.indexOf(rank) * ROW + ROW / 2;
  const value = (e: TimelineEvent) => (lay.axis === 'time' ? (e.time as number) : e.order);
  const initiatingRank = d.root_cause?.rank ?? null;

  const parts: string[] = [];
  parts.push(`<svg class="timeline" role="img" viewBox="0 0 ${width} ${height}" width="100%" preserveAspectRatio="xMinYMin meet" xmlns="http://www.w3.org/2000/svg">`);
  parts.push(`<title>Failures per rank in ${lay.axis === 'time' ? 'time' : 'log'} order</title>`);
  lay.rows.forEach((rank, i) => {
    const cy = TOP + i * ROW + ROW / 2;
    const cls = rank !== null && rank === initiatingRank ? 'row initiating' : 'row';
    if (i % 2 === 0) parts.push(`<rect class="band" x="0" y="${TOP + i * ROW}" width="${width}" height="${ROW}"/>`);
    parts.push(`<text class="${cls}" x="${plotLeft - 16}" y="${cy + 4}" text-anchor="end">${escapeHtml(rowLabel(rank))}</text>`);
    parts.push(`<line class="lane" x1="${plotLeft}" y1="${cy}" x2="${plotRight}" y2="${cy}"/>`);
  });
  const axisY = TOP + lay.rows.length * ROW;
  parts.push(`<line class="axis" x1="${plotLeft}" y1="${axisY}" x2="${plotRight}" y2="${axisY}"/>`);
  const unit = lay.axis === 'time' ? 's' : 'log line';
  parts.push(`<text class="tick" x="${plotLeft}" y="${axisY + 14}" text-anchor="start">${escapeHtml(lay.axis === 'time' ? `${fmt(0)} s` : `line ${fmt(lay.min)}`)}</text>`);
  if (span > 0) {
    const last = lay.axis === 'time' ? `+${fmt(span)} s` : `line ${fmt(lay.max)}`;
    parts.push(`<text class="tick" x="${plotRight}" y="${axisY + 14}" text-anchor="end">${escapeHtml(last)}</text>`);
  }
  parts.push(`<text class="tick caption" x="${(plotLeft + plotRight) / 2}" y="${axisY + 26}" text-anchor="middle">${escapeHtml(lay.axis === 'time' ? 'time →' : `${unit} order →`)}</text>`);

  const first = events.find(e => isInitiating(e, d));
  if (first && lay.rows.includes(first.rank)) {
    const fx = x(value(first));
    parts.push(`<line class="onset" x1="${fx}" y1="${TOP - 4}" x2="${fx}" y2="${axisY}"/>`);
  }
  // draw context first, then symptoms, then causes on top
  const order: Record<string, number> = { context: 0, symptom: 1, cause: 2 };
  const sorted = [...events].sort((a, b) => (order[a.role] ?? 0) - (order[b.role] ?? 0));
  for (const e of sorted) {
    if (!lay.rows.includes(e.rank)) continue;
    const cx = x(value(e));
    const cy = y(e.rank);
    const where = lay.axis === 'time' ? `t=+${fmt((e.time as number) - lay.min)} s, line ${e.line}` : `line ${e.line}`;
    const tip = `${rowLabel(e.rank)} · ${e.role} · ${e.rule} · ${where}\n${e.text}`;
    const label = `aria-label="${escapeHtml(`${rowLabel(e.rank)} ${e.role} ${e.rule} ${where}`)}"`;
    const attrs = options.clickable === false ? label : `data-line="${e.line}" tabindex="0" role="button" ${label}`;
    if (isInitiating(e, d)) {
      parts.push(`<g class="event initiating" ${attrs}><title>${escapeHtml('Initiating failure · ' + tip)}</title>` +
        `<circle class="halo" cx="${cx}" cy="${cy}" r="9"/><circle class="dot cause" cx="${cx}" cy="${cy}" r="5.5"/></g>`);
    } else if (e.role === 'cause') {
      parts.push(`<g class="event" ${attrs}><title>${escapeHtml(tip)}</title><circle class="dot cause" cx="${cx}" cy="${cy}" r="5"/></g>`);
    } else if (e.role === 'symptom') {
      const s = 5;
      parts.push(`<g class="event" ${attrs}><title>${escapeHtml(tip)}</title><rect class="dot symptom" x="${cx - s}" y="${cy - s}" width="${2 * s}" height="${2 * s}" transform="rotate(45 ${cx} ${cy})"/></g>`);
    } else {
      parts.push(`<g class="event" ${attrs}><title>${escapeHtml(tip)}</title><circle class="dot context" cx="${cx}" cy="${cy}" r="3.5"/></g>`);
    }
  }
  parts.push('</svg>');
  if (lay.hiddenRows > 0) parts.push(`<p class="note">${lay.hiddenRows} ranks without events are not drawn.</p>`);
  return parts.join('');
}
