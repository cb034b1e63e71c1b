import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CONSENT_KEY, consentedInterpreter, fromWorkspaceSettings, userSetting, interpreterProblem, isSupported, parseVersion, resolveInterpreter, serverLaunch } from '../src/interpreter';
import type { ConsentAnswer, Interpreter } from '../src/interpreter';

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

test('an interpreter counts as the workspace\'s when its value comes from the workspace settings and not the user\'s', () => {
  const evil = ['./tools/python'];
  assert.equal(fromWorkspaceSettings(evil, { workspaceValue: evil }), true);
  assert.equal(fromWorkspaceSettings(evil, { workspaceFolderValue: evil, globalValue: ['/usr/bin/python3'] }), true);
  assert.equal(fromWorkspaceSettings(evil, { globalValue: evil }), false, 'the user\'s own setting');
  assert.equal(fromWorkspaceSettings(evil, { globalValue: evil, workspaceValue: evil }), false, 'the same as the user\'s');
  // Restricted Mode: VS Code hands out the user's value; the workspace's is only in inspect()
  assert.equal(fromWorkspaceSettings(['/usr/bin/python3'], { globalValue: ['/usr/bin/python3'], workspaceValue: evil }), false);
  assert.equal(fromWorkspaceSettings([], { workspaceValue: [] }), false, 'empty: no interpreter named');
  assert.equal(fromWorkspaceSettings(evil, undefined), false);
  // refused, the user's own value runs (else the default)
  assert.deepEqual(userSetting({ globalValue: ['/usr/bin/python3', ' -X', 7], workspaceValue: evil }), ['/usr/bin/python3', '-X']);
  assert.deepEqual(userSetting({ workspaceValue: evil }), []);
  assert.deepEqual(userSetting({ globalValue: 'python3' }), []);
});

class Memento {
  readonly data = new Map<string, unknown>();
  get(key: string): unknown { return this.data.get(key); }
  update(key: string, value: unknown): Promise<void> { this.data.set(key, JSON.parse(JSON.stringify(value))); return Promise.resolve(); }
}

test('a workspace-provided interpreter is asked about once per workspace and command line, and the answer kept', async () => {
  const fallback = resolveInterpreter([], '/home/me/.venv/bin/python');
  const fromWs = resolveInterpreter(['./tools/python', '-X', 'utf8'], '/home/me/.venv/bin/python');
  const store = new Memento();
  const asked: Interpreter[] = [];
  const answering = (answer: ConsentAnswer) => (interp: Interpreter): Promise<ConsentAnswer> => {
    asked.push(interp);
    return Promise.resolve(answer);
  };
  // dismissed (Escape): the default runs, nothing is remembered, asked again at the next start
  assert.equal(await consentedInterpreter(fromWs, true, fallback, store, answering(undefined)), fallback);
  assert.equal(store.get(CONSENT_KEY), undefined);
  // allowed: runs, and is not asked again
  assert.equal(await consentedInterpreter(fromWs, true, fallback, store, answering('allow')), fromWs);
  assert.equal(await consentedInterpreter(fromWs, true, fallback, store, answering('deny')), fromWs);
  assert.equal(asked.length, 2);
  // another command line from the workspace is asked about anew; denied, the default runs, and stays so
  const other = resolveInterpreter(['/tmp/x/python'], undefined);
  assert.equal(await consentedInterpreter(other, true, fallback, store, answering('deny')), fallback);
  assert.equal(await consentedInterpreter(other, true, fallback, store, answering('allow')), fallback);
  assert.equal(asked.length, 3);
  assert.deepEqual(store.get(CONSENT_KEY), { '["./tools/python","-X","utf8"]': 'allow', '["/tmp/x/python"]': 'deny' });
  // the user's own setting, or no setting, is never asked about
  assert.equal(await consentedInterpreter(fromWs, false, fallback, new Memento(), answering('deny')), fromWs);
  assert.equal(await consentedInterpreter(fallback, true, fallback, new Memento(), answering('deny')), fallback);
  assert.equal(asked.length, 3);
  // a corrupt store is no answer: asked again
  const corrupt = new Memento();
  corrupt.data.set(CONSENT_KEY, { '["./tools/python","-X","utf8"]': 'yes please' });
  assert.equal(await consentedInterpreter(fromWs, true, fallback, corrupt, answering(undefined)), fallback);
  assert.equal(asked.length, 4);
});
