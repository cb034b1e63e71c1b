import { test } from 'node:test';
import assert from 'node:assert/strict';
import { keepTail, shortCommand, stripAnsi } from '../src/text';

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
