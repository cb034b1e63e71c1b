/** The server's `rootrank.diagnose` result: schema `rootrank.diagnosis/2` (or 1) plus `markdown`. Read-only data. */

/** 'error' | 'warning' | 'info' today; kept open so a newer server does not break the report. */
export type Severity = string;
/** 'cause' | 'symptom' | 'context' today. */
export type Role = string;

export interface Evidence {
  line: number;
  rank: number | null;
  text: string;
  source?: string;
}

export interface Sureness {
  level: 'high' | 'medium' | 'low';
  reason: string;
}

export interface RootCause {
  rule: string;
  title: string;
  severity: Severity;
  rank: number | null;
  host: string | null;
  line: number;
  source?: string;
  evidence: Evidence[];
  why: string;
  decided_by?: string;
  confidence?: { failure: Sureness; rank: Sureness } | null;
  fix: string;
  verify: string;
  references: string[];
}

export interface Candidate { rank: number; rule: string; why: string; title?: string }
export interface Collateral { rank: number; rule: string; line: number; title?: string }
export interface Finding {
  rule: string; title?: string; severity: Severity; role: Role; rank: number | null; line: number; count: number;
  /** The ranks that printed it as ranges ("0-3,5"; schema 1: a list), and how many. */
  ranks?: string | number[]; rank_count?: number;
}
export interface TimelineEvent {
  rank: number | null; rule: string; role: Role; line: number; order: number; time: number | null; text: string;
}

export interface Diagnosis {
  schema: string;
  root_cause: RootCause | null;
  candidates: Candidate[];
  collateral: Collateral[];
  findings: Finding[];
  /** Every rank the log carried, as runs (schema 2 writes ranges, "0-999999", at any size). */
  ranks_seen: RankRuns;
  timeline: TimelineEvent[];
  markdown: string;
}

export const SCHEMA = 'rootrank.diagnosis/2';
/** The schemas this extension reads: 1 listed every rank, 2 writes rank sets as ranges. */
export const SCHEMAS: readonly string[] = ['rootrank.diagnosis/1', SCHEMA];

/** Ranks as ascending, disjoint runs [first, last]: a million ranks in a row are one pair. */
export type RankRuns = Array<[number, number]>;

/** Runs from either form a diagnosis writes: ranges text ("0-2,4,7-9") or a list of ranks. */
export function rankRuns(value: unknown): RankRuns {
  const pairs: Array<[number, number]> = [];
  if (typeof value === 'string') {
    for (const part of value.split(',')) {
      const m = /^\s*(-?\d+)\s*(?:-\s*(-?\d+)\s*)?$/.exec(part);
      if (!m) continue;
      const first = Number(m[1]);
      const last = m[2] === undefined ? first : Number(m[2]);
      if (Number.isSafeInteger(first) && Number.isSafeInteger(last) && first <= last) pairs.push([first, last]);
    }
  } else if (Array.isArray(value)) {
    for (const r of value) if (Number.isSafeInteger(r)) pairs.push([r as number, r as number]);
  }
  pairs.sort((a, b) => a[0] - b[0]);
  const out: RankRuns = [];
  for (const [first, last] of pairs) {
    const prev = out[out.length - 1];
    if (prev && first <= prev[1] + 1) prev[1] = Math.max(prev[1], last);
    else out.push([first, last]);
  }
  return out;
}

/** How many ranks the runs hold. */
export function runsCount(runs: RankRuns): number {
  return runs.reduce((n, [first, last]) => n + last - first + 1, 0);
}

/** Whether `rank` is in the runs (binary search). */
export function runsHave(runs: RankRuns, rank: number): boolean {
  let lo = 0;
  let hi = runs.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const [first, last] = runs[mid]!;
    if (rank < first) hi = mid - 1;
    else if (rank > last) lo = mid + 1;
    else return true;
  }
  return false;
}

/** The first `limit` ranks of the runs, ascending. */
export function runsFirst(runs: RankRuns, limit: number): number[] {
  const out: number[] = [];
  for (const [first, last] of runs) {
    for (let r = first; r <= last && out.length < limit; r++) out.push(r);
    if (out.length >= limit) break;
  }
  return out;
}

/** The server's result as a Diagnosis, with absent lists defaulted; throws on another schema. */
export function toDiagnosis(value: unknown): Diagnosis {
  const problem = checkDiagnosis(value);
  if (problem) throw new Error(problem);
  const d = value as Partial<Diagnosis>;
  return {
    schema: d.schema ?? SCHEMA,
    root_cause: d.root_cause ?? null,
    candidates: d.candidates ?? [],
    collateral: d.collateral ?? [],
    findings: d.findings ?? [],
    ranks_seen: rankRuns((value as { ranks_seen?: unknown }).ranks_seen),
    timeline: d.timeline ?? [],
    markdown: d.markdown ?? '',
  };
}

/** Checks the parts of the result the report relies on; returns a message for anything else. */
export function checkDiagnosis(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) return 'the server returned no diagnosis';
  const d = value as Partial<Diagnosis>;
  if (typeof d.schema !== 'string' || !SCHEMAS.includes(d.schema)) {
    return `unexpected diagnosis schema ${JSON.stringify(d.schema)} (this extension reads ${SCHEMAS.join(', ')})`;
  }
  for (const key of ['candidates', 'collateral', 'findings', 'timeline'] as const) {
    if (d[key] !== undefined && !Array.isArray(d[key])) return `diagnosis field ${key} is not a list`;
  }
  const seen: unknown = (value as { ranks_seen?: unknown }).ranks_seen;
  if (seen !== undefined && typeof seen !== 'string' && !Array.isArray(seen)) return 'diagnosis field ranks_seen is not ranges or a list';
  return undefined;
}
