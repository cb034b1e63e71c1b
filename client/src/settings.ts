/**
 * VS Code's `rootrank.*` settings -> the server's settings record (rootrank/lsp/settings.py).
 * Pure: takes a reader so it is unit-tested without VS Code. Names that differ between the two sides are
 * mapped here and nowhere else; client-only settings (interpreter, importStrategy, notifications) are not sent.
 */

export type ImportStrategy = 'useBundled' | 'fromEnvironment';

/** What the client reads from `workspace.getConfiguration('rootrank', resource)`. */
export interface ConfigReader {
  get(key: string): unknown;
}

export interface ClientSettings {
  interpreter: string[];
  importStrategy: ImportStrategy;
  notifyOnTerminalFailure: boolean;
  logFilePatterns: string[];
}

/** The JSON the server's `parse_settings` accepts (camelCase keys; see Settings in rootrank/lsp/settings.py). */
export interface ServerSettings {
  select: string[];
  ignore: string[];
  severity: Record<string, string>;
  checkOn: 'change' | 'save';
  logPatterns: string[];
  python?: string;
}

/** Settings whose change needs a server restart (they decide how the server process is started). */
export const RESTART_SETTINGS = ['rootrank.interpreter', 'rootrank.importStrategy'] as const;

export const DEFAULT_LOG_PATTERNS = ['*.log', '*.out', '*.err', 'slurm-*.out', '*.log.txt'];

function strings(value: unknown): string[] {
  if (typeof value === 'string') return value.trim() ? [value.trim()] : [];
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string' && v.trim() !== '').map(v => v.trim()) : [];
}

export function readClientSettings(cfg: ConfigReader): ClientSettings {
  const strategy = cfg.get('importStrategy');
  const patterns = cfg.get('logFilePatterns');
  return {
    interpreter: strings(cfg.get('interpreter')),
    importStrategy: strategy === 'fromEnvironment' ? 'fromEnvironment' : 'useBundled',
    notifyOnTerminalFailure: cfg.get('notifyOnTerminalFailure') !== false,
    logFilePatterns: Array.isArray(patterns) ? strings(patterns) : DEFAULT_LOG_PATTERNS,
  };
}

/**
 * The server's settings. `python` is the workspace's interpreter (the server reads its torch version from
 * there, without importing torch): the Python extension's environment when known, else the interpreter
 * that runs the server.
 */
export function toServerSettings(cfg: ConfigReader, workspacePython?: string): ServerSettings {
  const severity: Record<string, string> = {};
  const raw = cfg.get('severityOverrides');
  if (raw && typeof raw === 'object' && !Array.isArray(raw)) {
    for (const [rule, level] of Object.entries(raw as Record<string, unknown>)) {
      if (typeof level === 'string') severity[rule] = level;
    }
  }
  // `lintOn` is the setting's name before 0.2; either one set to 'save' is honoured.
  const checkOn = cfg.get('checkOn') === 'save' || cfg.get('lintOn') === 'save' ? 'save' : 'change';
  const settings: ServerSettings = {
    select: strings(cfg.get('select')),
    ignore: strings(cfg.get('ignore')),
    severity,
    checkOn,
    logPatterns: readClientSettings(cfg).logFilePatterns,
  };
  if (workspacePython) settings.python = workspacePython;
  return settings;
}

/** initializationOptions / didChangeConfiguration payload: the server unwraps `settings.rootrank`. */
export function serverPayload(settings: ServerSettings): { settings: { rootrank: ServerSettings } } {
  return { settings: { rootrank: settings } };
}

/** Languages the server checks as code or configs, plus training logs (see rootrank/lsp/diagnostics.py). */
export const SERVER_LANGUAGES = ['python', 'yaml', 'json', 'jsonc', 'shellscript', 'log'];

export interface DocumentFilter { scheme: string; language?: string; pattern?: string }

/** The documents sent to the server: its languages (saved and untitled) and files matching the log patterns. */
export function documentSelector(logPatterns: string[]): DocumentFilter[] {
  return [
    ...SERVER_LANGUAGES.flatMap(language => [{ scheme: 'file', language }, { scheme: 'untitled', language }]),
    ...logPatterns.map(pattern => ({ scheme: 'file', pattern: `**/${pattern}` })),
  ];
}
