import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describe, parseScan } from '../src/failedLogsModel';

const answer = {
  failures: [{ path: '/w/slurm-1.out', uri: 'file:///w/slurm-1.out', rule: 'infra.slurm-node-failure', title: 'Slurm node failure',
    rank: null, host: 'jean-zay-1', evidence: 'srun: error: Node failure on jean-zay-1', evidenceLine: 3 },
  { path: '/w/logs/train.log', uri: 'file:///w/logs/train.log', rule: 'x', title: 'T', rank: 1, host: null, evidence: 'e' }],
  skipped: [{ path: '/w/big.err', reason: 'larger than 64 MiB (80 MiB): diagnose it on its own' }],
  scanned: 5, truncated: false, cancelled: false,
};

test('the server\'s answer is read; anything else is no answer', () => {
  const parsed = parseScan(answer);
  assert.ok(parsed);
  assert.equal(parsed.failures.length, 2);
  assert.deepEqual(parsed.failures.map(f => f.host), ['jean-zay-1', null]);
  assert.deepEqual(parsed.failures.map(f => f.rank), [null, 1]);
  assert.deepEqual(parsed.skipped.map(s => s.reason.startsWith('larger than')), [true]);
  assert.equal(parseScan(undefined), undefined);
  assert.equal(parseScan({ failures: 'x', skipped: [] }), undefined);
  assert.equal(parseScan({ failures: [{ path: 1 }], skipped: [] })?.failures.length, 0);
});

test('the message says what was read and what was left out', () => {
  const parsed = parseScan(answer);
  assert.ok(parsed);
  assert.equal(describe(parsed), '5 log files read, 2 with a failure; 1 not read (see below).');
  assert.equal(describe({ ...parsed, failures: [], skipped: [], truncated: true }),
    '5 log files read, none holds a failure; the workspace is larger than the walk\'s limit: some folders were not looked at.');
});
