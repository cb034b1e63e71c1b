import { test } from 'node:test';
import assert from 'node:assert/strict';
import { notificationDue, parseStatus, pickStatus, reportFile, statusBarText } from '../src/watchStatus';
import type { WatchStatus } from '../src/watchStatus';

function status(over: Partial<WatchStatus>): WatchStatus {
  return { schema: 'rootrank.watch-status/1', pid: 10, command: ['torchrun', 'train.py'], cwd: '/p', updated: 1000,
    state: 'running', ranks: 3, step: 12, text: '3 ranks, step 12, ok', report: '', exit_code: null, ...over };
}

test('status files: only rootrank.watch-status/1 is read', () => {
  assert.equal(parseStatus('{"schema": "other"}'), undefined);
  assert.equal(parseStatus('not json'), undefined);
  assert.equal(parseStatus(JSON.stringify(status({})))?.text, '3 ranks, step 12, ok');
});

test('the latest live watch is shown; a finished one for a while only', () => {
  const old = status({ pid: 1, updated: 900 });
  const recent = status({ pid: 2, updated: 990 });
  assert.equal(pickStatus([old, recent], 1000, () => true)?.pid, 2);
  assert.equal(pickStatus([old, recent], 1000, pid => pid === 1)?.pid, 2); // updated 10 s ago: still shown
  assert.equal(pickStatus([old, recent], 2000, pid => pid === 1)?.pid, 1);
  const done = status({ pid: 3, state: 'done', exit_code: 0, updated: 1000 });
  assert.equal(pickStatus([done], 1010, () => false)?.pid, 3);
  assert.equal(pickStatus([done], 1100, () => false), undefined);
});

test('status bar text and notifications', () => {
  assert.equal(statusBarText(status({})), '$(pulse) rootrank: 3 ranks, step 12, ok');
  const stalled = status({ state: 'stalled', text: 'rank 1 stalled 95 s at train.py:15' });
  assert.equal(statusBarText(stalled), '$(warning) rootrank: rank 1 stalled 95 s at train.py:15');
  assert.equal(statusBarText(status({ state: 'failed', text: 'failed: rank 2, Uncaught Python exception', exit_code: 1 })),
    '$(error) rootrank: failed: rank 2, Uncaught Python exception (exit 1)');
  assert.ok(notificationDue(status({}), stalled));
  assert.ok(!notificationDue(stalled, stalled));
  assert.ok(!notificationDue(undefined, status({})));
});

test('a click opens the latest stacks of a stall, else the report', () => {
  const files = ['stacks-1.txt', 'stacks-10.txt', 'stacks-2.txt', 'report.json'];
  assert.equal(reportFile(status({ state: 'stalled' }), files), 'stacks-10.txt');
  assert.equal(reportFile(status({ state: 'failed' }), files), 'report.json');
  assert.equal(reportFile(status({}), []), undefined);
});
