/** The answer of `rootrank.scanLogs`, checked and summarised (no vscode import: unit-tested under node). */

export interface FailedLog {
  path: string;
  uri: string;
  rule: string;
  title: string;
  rank: number | null;
  host: string | null;
  evidence: string;
}

export interface SkippedLog {
  path: string;
  reason: string;
}

export interface ScanAnswer {
  failures: FailedLog[];
  skipped: SkippedLog[];
  scanned: number;
  truncated: boolean;
  cancelled: boolean;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

/** The server's answer, or undefined when it is not one (an older server, a cancelled request). */
export function parseScan(value: unknown): ScanAnswer | undefined {
  if (!isObject(value) || !Array.isArray(value['failures']) || !Array.isArray(value['skipped'])) return undefined;
  const failures: FailedLog[] = [];
  for (const f of value['failures'] as unknown[]) {
    if (!isObject(f) || typeof f['path'] !== 'string' || typeof f['uri'] !== 'string') continue;
    failures.push({
      path: f['path'], uri: f['uri'], rule: typeof f['rule'] === 'string' ? f['rule'] : '',
      title: typeof f['title'] === 'string' ? f['title'] : '',
      rank: typeof f['rank'] === 'number' ? f['rank'] : null, host: typeof f['host'] === 'string' ? f['host'] : null,
      evidence: typeof f['evidence'] === 'string' ? f['evidence'] : '',
    });
  }
  const skipped: SkippedLog[] = [];
  for (const s of value['skipped'] as unknown[]) {
    if (isObject(s) && typeof s['path'] === 'string') skipped.push({ path: s['path'], reason: typeof s['reason'] === 'string' ? s['reason'] : '' });
  }
  return {
    failures, skipped, scanned: typeof value['scanned'] === 'number' ? value['scanned'] : failures.length,
    truncated: value['truncated'] === true, cancelled: value['cancelled'] === true,
  };
}

/** The view's message line: what was read, and what was left out. */
export function describe(answer: ScanAnswer): string {
  const files = `${answer.scanned} log file${answer.scanned === 1 ? '' : 's'} read`;
  const found = answer.failures.length ? `${answer.failures.length} with a failure` : 'none holds a failure';
  const notes = [answer.skipped.length ? `${answer.skipped.length} not read (see below)` : '',
    answer.truncated ? 'the workspace is larger than the walk\'s limit: some folders were not looked at' : '',
    answer.cancelled ? 'cancelled' : ''].filter(Boolean);
  return `${files}, ${found}${notes.length ? `; ${notes.join('; ')}` : ''}.`;
}
