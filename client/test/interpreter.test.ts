import { test } from 'node:test';
import assert from 'node:assert/strict';
import { interpreterProblem, isSupported, parseVersion, resolveInterpreter, serverLaunch } from '../src/interpreter';

test('setting first, then the Python extension, then python3 on PATH', () => {
  assert.deepEqual(resolveInterpreter(['/opt/py/bin/python', '-X', 'utf8'], '/venv/bin/python'),
    { command: '/opt/py/bin/python', args: ['-X', 'utf8'], source: 'setting' });
  assert.deepEqual(resolveInterpreter([], '/venv/bin/python'), { command: '/venv/bin/python', args: [], source: 'python-extension' });
  assert.deepEqual(resolveInterpreter([], undefined, 'linux'), { command: 'python3', args: [], source: 'path' });
  assert.equal(resolveInterpreter([], undefined, 'win32').command, 'python');
});

test('version check: 3.10 and newer', () => {
  assert.deepEqual(parseVersion('3.11.7\n'), [3, 11, 7]);
  assert.equal(parseVersion('garbage'), undefined);
  assert.ok(isSupported([3, 10, 0]) && isSupported([3, 14, 1]) && isSupported([4, 0, 0]));
  assert.ok(!isSupported([3, 9, 18]) && !isSupported([2, 7, 18]));
});

test('problems are explained with what to do', () => {
  const interp = resolveInterpreter([], undefined, 'linux');
  assert.equal(interpreterProblem(interp, { output: '3.12.1' }), undefined);
  const missing = interpreterProblem(interp, { error: 'not found' }) ?? '';
  assert.match(missing, /"python3" on PATH: not found/);
  assert.match(missing, /rootrank\.interpreter/);
  const old = interpreterProblem(resolveInterpreter(['/usr/bin/python3.8'], undefined), { output: '3.8.10' }) ?? '';
  assert.match(old, /needs Python 3\.10 or newer.*is Python 3\.8\.10/);
});

test('launch: python -m rootrank lsp with the bundle first (useBundled) or last (fromEnvironment)', () => {
  const interp = resolveInterpreter(['/p/python'], undefined);
  const bundled = serverLaunch(interp, 'useBundled', '/ext/bundled', { PYTHONPATH: '/mine', HOME: '/h' }, ':');
  assert.equal(bundled.command, '/p/python');
  assert.deepEqual(bundled.args, ['-m', 'rootrank', 'lsp']);
  assert.equal(bundled.env['PYTHONPATH'], '/ext/bundled/libs:/ext/bundled:/mine');
  assert.equal(bundled.env['HOME'], '/h');
  const env = serverLaunch(interp, 'fromEnvironment', '/ext/bundled', {}, ':');
  assert.equal(env.env['PYTHONPATH'], '/ext/bundled/libs:/ext/bundled');
  const env2 = serverLaunch(interp, 'fromEnvironment', '/ext/bundled', { PYTHONPATH: '/mine' }, ':');
  assert.equal(env2.env['PYTHONPATH'], '/mine:/ext/bundled/libs:/ext/bundled');
});
