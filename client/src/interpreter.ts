/**
 * Which Python runs the server, and how. Pure logic (no vscode, no child_process) so it is unit-tested:
 * the extension supplies the setting, the Python extension's environment (if any) and the probe's output.
 */
import * as path from 'node:path';
import type { ImportStrategy } from './settings';

export const MIN_PYTHON: readonly [number, number] = [3, 10];

export type InterpreterSource = 'setting' | 'python-extension' | 'path';

export interface Interpreter {
  command: string;
  /** Extra arguments from the setting, e.g. ["-X", "utf8"]. */
  args: string[];
  source: InterpreterSource;
}

/** `rootrank.interpreter`, else the Python extension's active environment, else python3 (python on Windows). */
export function resolveInterpreter(setting: string[], pythonExtension: string | undefined, platform: string = process.platform): Interpreter {
  const [command, ...args] = setting;
  if (command) return { command: expandHome(command), args, source: 'setting' };
  if (pythonExtension) return { command: pythonExtension, args: [], source: 'python-extension' };
  return { command: platform === 'win32' ? 'python' : 'python3', args: [], source: 'path' };
}

function expandHome(p: string): string {
  const home = process.env['HOME'] ?? process.env['USERPROFILE'];
  return home && (p === '~' || p.startsWith('~/')) ? path.join(home, p.slice(1)) : p;
}

/** The probe run with the interpreter: prints "major.minor.micro". */
export const VERSION_PROBE = 'import sys; print("%d.%d.%d" % sys.version_info[:3])';

export function parseVersion(output: string): [number, number, number] | undefined {
  const m = /(\d+)\.(\d+)\.(\d+)/.exec(output);
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : undefined;
}

export function isSupported(version: readonly number[]): boolean {
  const [major = 0, minor = 0] = version;
  return major > MIN_PYTHON[0] || (major === MIN_PYTHON[0] && minor >= MIN_PYTHON[1]);
}

/** The user-facing explanation when the interpreter cannot run the server; undefined when it can. */
export function interpreterProblem(interp: Interpreter, probe: { error?: string; output?: string }): string | undefined {
  const who = interp.source === 'setting' ? `the interpreter in "rootrank.interpreter" (${interp.command})`
    : interp.source === 'python-extension' ? `the Python extension's selected interpreter (${interp.command})`
      : `"${interp.command}" on PATH`;
  const todo = 'Install Python 3.10 or newer, or set "rootrank.interpreter" to one, then run "rootrank: Restart Server".';
  if (probe.error !== undefined) return `rootrank could not run ${who}: ${probe.error}. ${todo}`;
  const version = parseVersion(probe.output ?? '');
  if (!version) return `rootrank could not read the version of ${who}. ${todo}`;
  if (!isSupported(version)) {
    return `rootrank needs Python ${MIN_PYTHON.join('.')} or newer; ${who} is Python ${version.join('.')}. ${todo}`;
  }
  return undefined;
}

export interface ServerLaunch {
  command: string;
  args: string[];
  env: Record<string, string>;
}

/**
 * `python -m rootrank lsp`. useBundled puts the bundled libraries and server first on PYTHONPATH;
 * fromEnvironment puts them last, so the environment's own rootrank (and pygls) win and the bundle is a fallback.
 */
export function serverLaunch(interp: Interpreter, strategy: ImportStrategy, bundledDir: string,
  baseEnv: Record<string, string | undefined>, delimiter: string = path.delimiter): ServerLaunch {
  const bundled = [path.join(bundledDir, 'libs'), bundledDir];
  const existing = (baseEnv['PYTHONPATH'] ?? '').split(delimiter).filter(Boolean);
  const pythonPath = strategy === 'useBundled' ? [...bundled, ...existing] : [...existing, ...bundled];
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(baseEnv)) if (v !== undefined) env[k] = v;
  env['PYTHONPATH'] = pythonPath.join(delimiter);
  env['PYTHONUNBUFFERED'] = '1';
  env['PYTHONIOENCODING'] = 'utf-8';
  env['ROOTRANK_IMPORT_STRATEGY'] = strategy;
  return { command: interp.command, args: [...interp.args, '-m', 'rootrank', 'lsp'], env };
}

/** What `WorkspaceConfiguration.inspect('interpreter')` reports (the levels that matter here). */
export interface InspectedSetting {
  globalValue?: unknown;
  workspaceValue?: unknown;
  workspaceFolderValue?: unknown;
}

/**
 * Whether the interpreter in effect comes from the workspace's own settings (`.vscode/settings.json`, a
 * `.code-workspace` file): a cloned repository could name any program there. A workspace value equal to the
 * user's own is the user's choice, not the workspace's.
 */
export function fromWorkspaceSettings(effective: string[], inspected: InspectedSetting | undefined): boolean {
  if (!effective.length || !inspected) return false;
  const same = (value: unknown): boolean => JSON.stringify(value) === JSON.stringify(effective);
  const workspace = inspected.workspaceFolderValue !== undefined ? inspected.workspaceFolderValue : inspected.workspaceValue;
  return workspace !== undefined && same(workspace) && !same(inspected.globalValue);
}

/** The user's own `rootrank.interpreter` (what runs when a workspace's choice is refused). */
export function userSetting(inspected: InspectedSetting | undefined): string[] {
  const value = inspected?.globalValue;
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string' && v.trim() !== '').map(v => v.trim()) : [];
}

/** Per-workspace memory of the user's answers (VS Code's `workspaceState`: the workspace cannot write it). */
export interface ConsentStore {
  get(key: string): unknown;
  update(key: string, value: unknown): PromiseLike<void>;
}

export const CONSENT_KEY = 'rootrank.workspaceInterpreterConsent';

export type ConsentAnswer = 'allow' | 'deny' | undefined;

function remembered(store: ConsentStore): Record<string, 'allow' | 'deny'> {
  const raw = store.get(CONSENT_KEY);
  const out: Record<string, 'allow' | 'deny'> = {};
  if (raw && typeof raw === 'object' && !Array.isArray(raw)) {
    for (const [k, v] of Object.entries(raw as Record<string, unknown>)) if (v === 'allow' || v === 'deny') out[k] = v;
  }
  return out;
}

/**
 * The interpreter to run: the setting's when it is the user's, or the workspace's once the user allowed that
 * exact command line (asked once per workspace and command line, with `ask`: a modal prompt); else the one
 * the user's own setting or, without one, the default gives (`fallback`). A dismissed prompt is not remembered: it is asked again next start.
 */
export async function consentedInterpreter(setting: Interpreter, fromWorkspace: boolean, fallback: Interpreter,
  store: ConsentStore, ask: (interp: Interpreter) => PromiseLike<ConsentAnswer>): Promise<Interpreter> {
  if (setting.source !== 'setting' || !fromWorkspace) return setting;
  const key = JSON.stringify([setting.command, ...setting.args]);
  const answers = remembered(store);
  let answer: ConsentAnswer = answers[key];
  if (answer === undefined) {
    answer = await ask(setting);
    if (answer !== undefined) await store.update(CONSENT_KEY, { ...answers, [key]: answer });
  }
  return answer === 'allow' ? setting : fallback;
}
