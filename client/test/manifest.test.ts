import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

// The compiled test runs from client/out/test.
const root = join(__dirname, '..', '..', '..');
interface Manifest {
  main: string;
  engines: { vscode: string };
  devDependencies: Record<string, string>;
  extensionDependencies?: string[];
  repository?: { url: string };
  contributes: {
    commands: { command: string }[];
    menus: Record<string, { command: string }[]>;
    configuration: { properties: Record<string, unknown> };
  };
}
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as Manifest;
const extensionSource = readFileSync(join(root, 'client', 'src', 'extension.ts'), 'utf8');
const settingsSource = readFileSync(join(root, 'client', 'src', 'settings.ts'), 'utf8');

test('every contributed command is registered, and none clashes with the server command', () => {
  for (const { command } of manifest.contributes.commands) {
    assert.notEqual(command, 'rootrank.diagnose', 'vscode-languageclient registers the server command itself');
    assert.notEqual(command, 'rootrank.scanLogs', 'vscode-languageclient registers the server command itself');
    assert.ok(extensionSource.includes(`'${command}'`), `${command} is registered in extension.ts`);
  }
  const declared = new Set(manifest.contributes.commands.map(c => c.command));
  for (const [menu, items] of Object.entries(manifest.contributes.menus)) {
    for (const item of items) assert.ok(declared.has(item.command), `${menu}: ${item.command} is declared`);
  }
});

test('every setting the client reads is contributed', () => {
  const props = manifest.contributes.configuration.properties;
  const read = [...settingsSource.matchAll(/cfg\.get\('([A-Za-z]+)'\)/g)].map(m => `rootrank.${m[1] ?? ''}`);
  assert.ok(read.length >= 8);
  for (const key of read) assert.ok(key in props, `${key} is in package.json`);
});

test('installable offline: engines floor matches @types/vscode, no marketplace dependencies', () => {
  assert.equal(manifest.engines.vscode, '^1.93.0');
  assert.equal(manifest.devDependencies['@types/vscode'], '1.93.0');
  assert.equal(manifest.extensionDependencies, undefined);
  assert.equal(manifest.main, './client/out/extension.js');
  assert.ok(manifest.repository?.url, 'vsce needs a repository field to package without prompting');
});

test('a workspace cannot choose the server\'s program in Restricted Mode, nor silently when trusted', () => {
  const props = manifest.contributes.configuration.properties as Record<string, { scope?: string }>;
  // Not a machine scope: a remote window (code-server, Remote-SSH) takes machine-scoped values from the remote's
  // settings, not the user's (seen in the code-server e2e: the User value stopped applying), so users who set it
  // would silently lose it. The
  // workspace's value is what needs guarding, and is guarded: restricted in Restricted Mode, asked about when
  // trusted (server.ts).
  assert.equal(props['rootrank.interpreter']?.scope, 'resource');
  const trust = (manifest as unknown as { capabilities?: { untrustedWorkspaces?: {
    supported: unknown; restrictedConfigurations?: string[]; description?: string; }; }; }).capabilities?.untrustedWorkspaces;
  assert.equal(trust?.supported, 'limited');
  assert.ok(trust.description);
  for (const key of ['rootrank.interpreter', 'rootrank.importStrategy']) {
    assert.ok(trust.restrictedConfigurations?.includes(key), `${key} is restricted`);
    assert.ok(key in props, `${key} is contributed`);
  }
  const serverSource = readFileSync(join(root, 'client', 'src', 'server.ts'), 'utf8');
  assert.match(serverSource, /consentedInterpreter\(/, 'the server start asks before a workspace interpreter runs');
  assert.match(serverSource, /modal: true/);
});
