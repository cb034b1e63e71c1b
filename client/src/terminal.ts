/**
 * Failed terminal commands, through shell integration (stable since VS Code 1.93): each execution's output is
 * read from its start (read() must be called in the start event or output is missed), and kept for the last
 * failed command. Nothing leaves the machine: the text goes only to the local server.
 */
import * as vscode from 'vscode';
import { TailBuffer } from './text';

const MAX_CAPTURE = 8 * 1024 * 1024;
/** Exit codes of commands the user interrupted (Ctrl+C, Ctrl+\): not failures worth a notification. */
const INTERRUPTED = new Set([130, 131]);

export interface FailedCommand {
  commandLine: string;
  exitCode: number;
  output: string;
  terminal: vscode.Terminal;
}

export class TerminalWatcher implements vscode.Disposable {
  private readonly captures = new Map<vscode.TerminalShellExecution, Promise<string>>();
  private readonly disposables: vscode.Disposable[] = [];
  lastFailed: FailedCommand | undefined;

  constructor(onFailure: (failed: FailedCommand) => void) {
    this.disposables.push(
      vscode.window.onDidStartTerminalShellExecution(e => {
        const stream = e.execution.read();
        this.captures.set(e.execution, (async () => {
          const tail = new TailBuffer(MAX_CAPTURE);
          for await (const chunk of stream) tail.push(chunk);
          return tail.text();
        })());
      }),
      vscode.window.onDidEndTerminalShellExecution(async e => {
        const capture = this.captures.get(e.execution);
        this.captures.delete(e.execution);
        if (e.exitCode === undefined || e.exitCode === 0 || INTERRUPTED.has(e.exitCode) || !capture) return;
        const output = await capture;
        if (!output.trim()) return;
        this.lastFailed = { commandLine: e.execution.commandLine.value, exitCode: e.exitCode, output, terminal: e.terminal };
        onFailure(this.lastFailed);
      }),
    );
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
    this.captures.clear();
  }
}

/**
 * The active terminal's selection. `Terminal.selection` is still a proposed API, so this copies the selection
 * and reads the clipboard, then puts the user's clipboard back.
 */
export async function terminalSelection(): Promise<string> {
  const saved = await vscode.env.clipboard.readText();
  try {
    await vscode.env.clipboard.writeText('');
    await vscode.commands.executeCommand('workbench.action.terminal.copySelection');
    return await vscode.env.clipboard.readText();
  } finally {
    await vscode.env.clipboard.writeText(saved);
  }
}
