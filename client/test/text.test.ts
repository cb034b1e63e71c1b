import { test } from 'node:test';
import assert from 'node:assert/strict';
import { keepTail, shortCommand, stripAnsi, TailBuffer } from '../src/text';

test('strips colours and shell-integration marks for display', () => {
  assert.equal(stripAnsi('\x1b[31mError\x1b[0m\x1b]633;D;1\x07 done'), 'Error done');
  assert.equal(stripAnsi('a\r\nb\r\n'), 'a\nb\n');
});

test('keeps the tail of a long capture from a line start', () => {
  assert.equal(keepTail('aaa\nbbb\nccc', 100), 'aaa\nbbb\nccc');
  assert.equal(keepTail('aaa\nbbb\nccc', 6), 'ccc');
});

test('short command labels', () => {
  assert.equal(shortCommand('  torchrun --nproc-per-node 8 train.py\nnext'), 'torchrun --nproc-per-node 8 train.py');
  assert.equal(shortCommand('x'.repeat(100), 10), 'xxxxxxxxx…');
});

test('a tail buffer keeps what keepTail keeps of the whole stream', () => {
  let seed = 7;
  const random = (n: number): number => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n; };
  for (const max of [1, 5, 16, 100]) {
    for (let round = 0; round < 50; round++) {
      const tail = new TailBuffer(max);
      let whole = '';
      for (let i = random(30); i > 0; i--) {
        const chunk = Array.from({ length: random(3 * max) }, () => 'ab\n'[random(3)]).join('');
        tail.push(chunk);
        whole += chunk;
        assert.ok(tail.length <= 2 * max, 'kept at most max plus one chunk');
      }
      assert.equal(tail.text(), keepTail(whole, max), JSON.stringify({ max, whole }));
      assert.equal(tail.text(), keepTail(whole, max), 'reading it twice gives the same text');
    }
  }
});

test('the cost of a captured chunk stays flat however long the capture (work counted, not timed)', () => {
  // 64 MiB of terminal output in 4 KiB chunks into an 8 MiB capture, as a long training run prints it.
  const max = 8 * 1024 * 1024;
  const chunk = ('x'.repeat(99) + '\n').repeat(41).slice(0, 4096);
  const tail = new TailBuffer(max);
  const perChunk: number[] = [];
  const chunks = (64 * 1024 * 1024) / chunk.length;
  for (let i = 0; i < chunks; i++) {
    const before = tail.work;
    tail.push(chunk);
    perChunk.push(tail.work - before);
  }
  const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;
  const full = max / chunk.length; // chunks until the capture is full
  const early = mean(perChunk.slice(full, full + 2048));
  const late = mean(perChunk.slice(-2048));
  assert.ok(late <= 4 && early <= 4, `work per chunk: ${early} once full, ${late} at the end`);
  assert.ok(Math.abs(late - early) <= 1, `work per chunk grew from ${early} to ${late}`);
  assert.ok(tail.work / chunks <= 4, `amortised work per chunk: ${tail.work / chunks}`);
  assert.ok(tail.length <= max + chunk.length);
  const text = tail.text();
  assert.ok(text.length <= max && text.length > max - 200 && text.startsWith('x'), String(text.length));
  // one chunk larger than the capture keeps only its tail, copying no more than the chunk holds
  const big = new TailBuffer(1024);
  big.push('y'.repeat(10 * 1024) + '\nz');
  assert.ok(big.work <= 1024 + 1 && big.length === 1024);
  assert.equal(big.text(), 'z');
});
