/** Small pure helpers for captured text. */

// CSI and OSC sequences (colours, shell-integration marks) for showing terminal text in an editor.
// The server strips them itself before diagnosing; this is for display only.
// eslint-disable-next-line no-control-regex
const ANSI = /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]/g;

export function stripAnsi(text: string): string {
  return text.replace(ANSI, '').replace(/\r\n/g, '\n');
}

/** Keeps the last `max` characters of a growing capture, cut at a line start. */
export function keepTail(text: string, max: number): string {
  if (text.length <= max) return text;
  const tail = text.slice(text.length - max);
  const nl = tail.indexOf('\n');
  return nl >= 0 && nl < tail.length - 1 ? tail.slice(nl + 1) : tail;
}

/** A short label for a command line: first line, at most `max` characters. */
export function shortCommand(commandLine: string, max = 60): string {
  const first = commandLine.trim().split('\n')[0] ?? '';
  return first.length > max ? first.slice(0, max - 1) + '…' : first;
}
