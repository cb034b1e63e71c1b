/** Starting, stopping and talking to `python -m rootrank lsp`. All language features come from the server. */
import { execFile } from 'node:child_process';
import * as vscode from 'vscode';
import { ExecuteCommandRequest, LanguageClient, RevealOutputChannelOn } from 'vscode-languageclient/node';
import type { LanguageClientOptions, ServerOptions } from 'vscode-languageclient/node';
import { consentedInterpreter, fromWorkspaceSettings, interpreterProblem, resolveInterpreter, serverLaunch, userSetting, VERSION_PROBE } from './interpreter';
import type { ConsentAnswer, Interpreter } from './interpreter';
import { activePythonExecutable } from './python';
import { documentSelector, readClientSettings, serverPayload, toServerSettings } from './settings';
import { toDiagnosis } from './types';
import type { Diagnosis } from './types';

/** The server's command (client command ids must differ: vscode-languageclient registers this one). */
export const SERVER_DIAGNOSE = 'rootrank.diagnose';
export const SERVER_MEASURE = 'rootrank.measure';
export const SERVER_SCAN_WORKSPACE = 'rootrank.scanLogs';

function probe(interp: Interpreter): Promise<{ error?: string; output?: string }> {
  return new Promise(resolve => {
    execFile(interp.command, [...interp.args, '-c', VERSION_PROBE], { timeout: 15000 }, (err, stdout, stderr) => {
      if (err) {
        const code = (err as NodeJS.ErrnoException).code;
        resolve({ error: code === 'ENOENT' ? 'not found' : (stderr.trim().split('\n').pop() || err.message) });
      } else {
        resolve({ output: stdout });
      }
    });
  });
}

/** The modal prompt before the first run of an interpreter named by the workspace's own settings. */
async function askToRunWorkspaceInterpreter(interp: Interpreter): Promise<ConsentAnswer> {
  const commandLine = [interp.command, ...interp.args].join(' ');
  const allow = 'Allow', useDefault = 'Use Default Interpreter';
  const choice = await vscode.window.showWarningMessage(
    `This workspace's settings ask rootrank to start its server with ${commandLine}. Run this program?`,
    {
      modal: true,
      detail: '"rootrank.interpreter" is set in this workspace\'s settings (.vscode/settings.json or the .code-workspace file), '
        + 'which come with the folder, for instance a cloned repository. Allow it only if you trust that program. '
        + 'The answer is remembered for this workspace and this command line.',
    },
    allow, useDefault);
  return choice === allow ? 'allow' : choice === useDefault ? 'deny' : undefined;
}

export class RootrankServer implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private starting: Promise<LanguageClient | undefined> | undefined;
  private workspacePython: string | undefined;
  private interpreter: string | undefined;
  private launch: { command: string; args: string[]; env: Record<string, string> } | undefined;

  constructor(private readonly context: vscode.ExtensionContext, readonly channel: vscode.LogOutputChannel) {}

  private config(): vscode.WorkspaceConfiguration {
    return vscode.workspace.getConfiguration('rootrank', vscode.workspace.workspaceFolders?.[0]?.uri);
  }

  /** The running client, starting the server if needed; undefined when it cannot start (the user was told). */
  async ready(): Promise<LanguageClient | undefined> {
    if (this.client?.isRunning()) return this.client;
    this.starting ??= this.start().finally(() => { this.starting = undefined; });
    return this.starting;
  }

  private async start(): Promise<LanguageClient | undefined> {
    const cfg = this.config();
    const client = readClientSettings(cfg);
    this.workspacePython = await activePythonExecutable(vscode.workspace.workspaceFolders?.[0]?.uri);
    const configured = resolveInterpreter(client.interpreter, this.workspacePython);
    const inspected = cfg.inspect('interpreter');
    const fallback = resolveInterpreter(userSetting(inspected), this.workspacePython);
    const fromWorkspace = fromWorkspaceSettings(client.interpreter, inspected);
    const interp = await consentedInterpreter(configured, fromWorkspace, fallback, this.context.workspaceState,
      askToRunWorkspaceInterpreter);
    if (interp !== configured) {
      this.channel.warn(`not running the interpreter from this workspace's settings (${configured.command}); using ${interp.command}`);
    }
    const problem = interpreterProblem(interp, await probe(interp));
    if (problem) {
      this.channel.error(problem);
      void vscode.window.showErrorMessage(problem, 'Open Settings', 'Show Log').then(choice => {
        if (choice === 'Open Settings') void vscode.commands.executeCommand('workbench.action.openSettings', 'rootrank.interpreter');
        if (choice === 'Show Log') this.channel.show();
      });
      return undefined;
    }
    this.interpreter = interp.command;
    const launch = serverLaunch(interp, client.importStrategy, this.context.asAbsolutePath('bundled'), process.env);
    this.launch = launch;
    this.channel.info(`starting: ${launch.command} ${launch.args.join(' ')} (interpreter from ${interp.source}, ${client.importStrategy})`);
    const serverOptions: ServerOptions = {
      command: launch.command,
      args: launch.args,
      options: { env: launch.env, cwd: vscode.workspace.workspaceFolders?.[0]?.uri.fsPath },
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: documentSelector(client.logFilePatterns),
      outputChannel: this.channel,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      initializationOptions: serverPayload(toServerSettings(cfg, this.workspacePython ?? interp.command)),
      middleware: {
        workspace: {
          // The server pulls its section (workspace/configuration): answer with the server's names
          // (severity, logPatterns, python), not VS Code's raw `rootrank.*` values.
          configuration: async (params, token, next) => {
            const result = await next(params, token);
            if (!Array.isArray(result)) return result;
            return params.items.map((item, i): unknown => item.section === 'rootrank'
              ? toServerSettings(vscode.workspace.getConfiguration('rootrank', item.scopeUri ? vscode.Uri.parse(item.scopeUri) : undefined),
                this.workspacePython ?? interp.command)
              : result[i]);
          },
        },
      },
    };
    const lc = new LanguageClient('rootrank', 'rootrank', serverOptions, clientOptions);
    try {
      await lc.start();
    } catch (err) {
      const message = `rootrank: the server did not start: ${err instanceof Error ? err.message : String(err)}`;
      this.channel.error(message);
      void vscode.window.showErrorMessage(message, 'Show Log').then(c => { if (c) this.channel.show(); });
      await lc.dispose().catch(() => undefined);
      return undefined;
    }
    this.client = lc;
    return lc;
  }

  /**
   * `python -m rootrank ARGS...` with the server's interpreter and import path (`rootrank watch -` for a
   * terminal's command); undefined when the server could not start.
   */
  async rootrankCommand(args: string[]): Promise<{ command: string; args: string[]; env: Record<string, string> } | undefined> {
    if (!await this.ready() || !this.launch) return undefined;
    return { command: this.launch.command, args: [...this.launch.args.slice(0, -1), ...args], env: { ...this.launch.env } };
  }

  /** Pushes changed settings to the running server (no restart needed for these). */
  async pushSettings(): Promise<void> {
    if (!this.client?.isRunning()) return;
    const payload = serverPayload(toServerSettings(this.config(), this.workspacePython ?? this.interpreter));
    await this.client.sendNotification('workspace/didChangeConfiguration', payload);
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.ready();
  }

  async stop(): Promise<void> {
    const lc = this.client;
    this.client = undefined;
    if (lc) await lc.stop(2000).catch(() => undefined);
  }

  /** `rootrank.diagnose` on text, or on a document/file when `text` is empty and `uri` given. */
  async diagnose(text: string, uri?: vscode.Uri): Promise<Diagnosis | undefined> {
    const lc = await this.ready();
    if (!lc) return undefined;
    const args: string[] = uri ? [text, uri.toString()] : [text];
    const result: unknown = await lc.sendRequest(ExecuteCommandRequest.type, { command: SERVER_DIAGNOSE, arguments: args });
    return toDiagnosis(result);
  }

  /** `rootrank.measure` (the probe runs in the workspace's interpreter); cancelling `token` stops it. */
  async measure(options: Record<string, unknown>, token?: vscode.CancellationToken): Promise<unknown> {
    const lc = await this.ready();
    if (!lc) return undefined;
    return lc.sendRequest(ExecuteCommandRequest.type, { command: SERVER_MEASURE, arguments: [options] }, token);
  }

  /** `rootrank.scanLogs`: the workspace's log files that hold a failure; cancelling `token` stops it. */
  async scanWorkspace(options: Record<string, unknown>, token?: vscode.CancellationToken): Promise<unknown> {
    const lc = await this.ready();
    if (!lc) return undefined;
    return lc.sendRequest(ExecuteCommandRequest.type, { command: SERVER_SCAN_WORKSPACE, arguments: [options] }, token);
  }

  dispose(): void {
    void this.stop();
  }
}
