/** The server's `rootrank.diagnose` result: schema `rootrank.diagnosis/1` plus `markdown`. Read-only data. */

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
  ranks_seen: number[];
  timeline: TimelineEvent[];
  markdown: string;
}

export const SCHEMA = 'rootrank.diagnosis/1';

/** The server's result as a Diagnosis, with absent lists defaulted; throws on another schema. */
export function toDiagnosis(value: unknown): Diagnosis {
  const problem = checkDiagnosis(value);
  if (problem) throw new Error(problem);
  const d = value as Partial<Diagnosis>;
  return {
    schema: SCHEMA,
    root_cause: d.root_cause ?? null,
    candidates: d.candidates ?? [],
    collateral: d.collateral ?? [],
    findings: d.findings ?? [],
    ranks_seen: d.ranks_seen ?? [],
    timeline: d.timeline ?? [],
    markdown: d.markdown ?? '',
  };
}

/** Checks the parts of the result the report relies on; returns a message for anything else. */
export function checkDiagnosis(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) return 'the server returned no diagnosis';
  const d = value as Partial<Diagnosis>;
  if (d.schema !== SCHEMA) return `unexpected diagnosis schema ${JSON.stringify(d.schema)} (this extension reads ${SCHEMA})`;
  for (const key of ['candidates', 'collateral', 'findings', 'ranks_seen', 'timeline'] as const) {
    if (d[key] !== undefined && !Array.isArray(d[key])) return `diagnosis field ${key} is not a list`;
  }
  return undefined;
}
