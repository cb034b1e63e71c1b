/**
 * The status files `rootrank watch` writes while a job runs in an integrated terminal (the extension sets
 * ROOTRANK_WATCH_STATUS_DIR there; schema rootrank.watch-status/1): which one to show, and how.
 * No vscode import here, so the unit tests run under plain node.
 */

export interface WatchStatus {
  schema: string;
  pid: number;
  command: string[];
  cwd: string;
  updated: number; // seconds since the epoch
  state: 'running' | 'stalled' | 'failed' | 'done' | 'interrupted';
  ranks: number;
  step: number | null;
  text: string;
  report: string; // the folder with stacks-N.txt and report.json, "" before anything was written
  exit_code: number | null;
}

/** How long a finished watch stays in the status bar. */
export const KEEP_FINISHED_S = 30;
const LIVE = new Set(['running', 'stalled', 'failed']);

export function parseStatus(text: string): WatchStatus | undefined {
  try {
    const data = JSON.parse(text) as Partial<WatchStatus>;
    if (data.schema !== 'rootrank.watch-status/1' || typeof data.text !== 'string' || typeof data.state !== 'string') return undefined;
    return data as WatchStatus;
  } catch {
    return undefined;
  }
}

/** The status to show: the most recently updated watch still running (or just finished). */
export function pickStatus(statuses: WatchStatus[], nowS: number, alive: (pid: number) => boolean): WatchStatus | undefined {
  const shown = statuses.filter(s => (LIVE.has(s.state) && alive(s.pid) && s.exit_code === null)
    || nowS - s.updated <= KEEP_FINISHED_S);
  shown.sort((a, b) => b.updated - a.updated);
  return shown[0];
}

export function statusBarText(status: WatchStatus): string {
  const icon = status.state === 'stalled' ? '$(warning)' : status.state === 'failed' ? '$(error)'
    : status.state === 'running' ? '$(pulse)' : '$(check)';
  const ended = status.exit_code !== null && status.state !== 'running' ? ` (exit ${status.exit_code})` : '';
  return `${icon} rootrank: ${status.text}${ended}`;
}

/** A notification is due when a watch turns stalled or failed (once per watch and state). */
export function notificationDue(previous: WatchStatus | undefined, current: WatchStatus): boolean {
  if (current.state !== 'stalled' && current.state !== 'failed') return false;
  return !previous || previous.pid !== current.pid || previous.state !== current.state;
}

/** The file a click opens: the latest stacks file of a stall, else the final report. */
export function reportFile(status: WatchStatus, files: string[]): string | undefined {
  const stacks = files.filter(f => /^stacks-\d+\.txt$/.test(f))
    .sort((a, b) => Number(a.match(/\d+/)?.[0]) - Number(b.match(/\d+/)?.[0]));
  if (status.state === 'stalled' && stacks.length) return stacks[stacks.length - 1];
  if (files.includes('report.json')) return 'report.json';
  return stacks.length ? stacks[stacks.length - 1] : undefined;
}
