import { test } from 'node:test';
import assert from 'node:assert/strict';
import { documentSelector, readClientSettings, serverPayload, toServerSettings } from '../src/settings';
import type { ConfigReader } from '../src/settings';

const reader = (values: Record<string, unknown>): ConfigReader => ({ get: (k: string) => values[k] });

test('maps VS Code names to the server settings record', () => {
  const s = toServerSettings(reader({
    select: ['checkpoint.'], ignore: ['checkpoint.overhead'], severityOverrides: { 'checkpoint.': 'error', bad: 3 },
    checkOn: 'save', logFilePatterns: ['*.txt'], interpreter: ['/x/python'], importStrategy: 'fromEnvironment',
  }), '/venv/bin/python');
  assert.deepEqual(s, {
    select: ['checkpoint.'], ignore: ['checkpoint.overhead'], severity: { 'checkpoint.': 'error' },
    checkOn: 'save', logPatterns: ['*.txt'], python: '/venv/bin/python',
  });
  assert.deepEqual(serverPayload(s).settings.rootrank, s);
});

test('defaults and bad values', () => {
  const s = toServerSettings(reader({ select: 'checkpoint.', checkOn: 'sometimes', severityOverrides: [] }));
  assert.deepEqual(s.select, ['checkpoint.']);
  assert.equal(s.checkOn, 'change');
  assert.deepEqual(s.severity, {});
  assert.ok(s.logPatterns.includes('slurm-*.out'));
  assert.equal('python' in s, false);
});

test('lintOn, the setting\'s name before 0.2, still works', () => {
  assert.equal(toServerSettings(reader({ lintOn: 'save' })).checkOn, 'save');
  assert.equal(toServerSettings(reader({ lintOn: 'change', checkOn: 'save' })).checkOn, 'save');
});

test('client-only settings', () => {
  assert.deepEqual(readClientSettings(reader({})), {
    interpreter: [], importStrategy: 'useBundled', notifyOnTerminalFailure: true,
    logFilePatterns: ['*.log', '*.out', '*.err', 'slurm-*.out', '*.log.txt'],
  });
  const c = readClientSettings(reader({ interpreter: ' /usr/bin/python3 ', importStrategy: 'fromEnvironment', notifyOnTerminalFailure: false }));
  assert.deepEqual(c.interpreter, ['/usr/bin/python3']);
  assert.equal(c.importStrategy, 'fromEnvironment');
  assert.equal(c.notifyOnTerminalFailure, false);
});

test('document selector: Python and configs (saved and untitled), log language, log file patterns', () => {
  const sel = documentSelector(['slurm-*.out']);
  assert.ok(sel.some(f => f.scheme === 'file' && f.language === 'python'));
  assert.ok(sel.some(f => f.scheme === 'untitled' && f.language === 'python'));
  assert.ok(sel.some(f => f.language === 'log'));
  assert.ok(sel.some(f => f.pattern === '**/slurm-*.out'));
  assert.ok(!sel.some(f => f.scheme === 'rootrank-capture'), 'captured text is not re-diagnosed');
});
