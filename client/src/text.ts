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

/**
 * The last `max` characters of a stream of chunks (a terminal command's output), kept as the chunks themselves in
 * a queue: a chunk is appended without copying what came before, and chunks wholly before the last `max`
 * characters are dropped from the front by moving an index; the array is compacted once the dropped part is
 * the larger half. So each chunk costs amortised O(1) however long the capture, and memory stays under `max`
 * plus one chunk. The text is joined (and cut at a line start) only when asked for.
 */
export class TailBuffer {
  private chunks: string[] = [];
  private head = 0;
  private size = 0;
  private total = 0;
  /** Units of work done so far: chunks appended or dropped, array slots moved, characters copied. */
  work = 0;

  constructor(readonly max: number) {}

  get length(): number {
    return this.size;
  }

  push(chunk: string): void {
    if (!chunk) return;
    this.total += chunk.length;
    if (chunk.length > this.max) {
      // only its tail can survive; the copy is no longer than the chunk itself
      chunk = chunk.slice(chunk.length - this.max);
      this.work += chunk.length;
    }
    this.chunks.push(chunk);
    this.size += chunk.length;
    this.work += 1;
    while (this.size - (this.chunks[this.head] ?? '').length >= this.max) {
      this.size -= (this.chunks[this.head] ?? '').length;
      this.chunks[this.head] = '';
      this.head += 1;
      this.work += 1;
    }
    if (this.head > 64 && this.head * 2 > this.chunks.length) {
      this.work += this.chunks.length - this.head;
      this.chunks = this.chunks.slice(this.head);
      this.head = 0;
    }
  }

  /** The kept text: the last `max` characters, cut at a line start (as `keepTail` on the whole stream). */
  text(): string {
    const joined = this.chunks.slice(this.head).join('');
    this.chunks = joined ? [joined] : [];
    this.head = 0;
    if (this.total <= this.max) return joined;
    const tail = joined.slice(Math.max(0, joined.length - this.max));
    const nl = tail.indexOf('\n');
    return nl >= 0 && nl < tail.length - 1 ? tail.slice(nl + 1) : tail;
  }
}

/** A short label for a command line: first line, at most `max` characters. */
export function shortCommand(commandLine: string, max = 60): string {
  const first = commandLine.trim().split('\n')[0] ?? '';
  return first.length > max ? first.slice(0, max - 1) + '…' : first;
}
