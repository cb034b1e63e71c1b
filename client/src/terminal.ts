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

/** Receives a watched execution's output as it comes; `undefined` once it has ended. */
export type OutputListener = (chunk: string | undefined) => void;

/** A command running in a terminal: its output so far, and who listens to the rest. */
interface RunningCommand {
  execution: vscode.TerminalShellExecution;
  tail: TailBuffer;
  listeners: Set<OutputListener>;
}

export class TerminalWatcher implements vscode.Disposable {
  private readonly captures = new Map<vscode.TerminalShellExecution, Promise<string>>();
  private readonly disposables: vscode.Disposable[] = [];
  private readonly running = new Map<vscode.Terminal, RunningCommand>();
  private readonly armed = new Map<vscode.Terminal, OutputListener>();
  private readonly watched = new WeakSet<vscode.TerminalShellExecution>();
  lastFailed: FailedCommand | undefined;

  constructor(onFailure: (failed: FailedCommand) => void) {
    this.disposables.push(
      vscode.window.onDidStartTerminalShellExecution(e => {
        const stream = e.execution.read();
        const running: RunningCommand = { execution: e.execution, tail: new TailBuffer(MAX_CAPTURE), listeners: new Set() };
        this.running.set(e.terminal, running);
        const next = this.armed.get(e.terminal);
        if (next) {
          this.armed.delete(e.terminal);
          this.watched.add(e.execution);
          running.listeners.add(next);
        }
        this.captures.set(e.execution, (async () => {
          try {
            for await (const chunk of stream) {
              running.tail.push(chunk);
              for (const listener of running.listeners) listener(chunk);
            }
          } finally {
            for (const listener of running.listeners) listener(undefined);
            running.listeners.clear();
            if (this.running.get(e.terminal) === running) this.running.delete(e.terminal);
          }
          return running.tail.text();
        })());
      }),
      vscode.window.onDidEndTerminalShellExecution(async e => {
        const capture = this.captures.get(e.execution);
        this.captures.delete(e.execution);
        if (e.exitCode === undefined || e.exitCode === 0 || INTERRUPTED.has(e.exitCode) || !capture) return;
        const output = await capture;
        if (!output.trim()) return;
        this.lastFailed = { commandLine: e.execution.commandLine.value, exitCode: e.exitCode, output, terminal: e.terminal };
        // A watched command has had its notification from the watch already.
        if (!this.watched.has(e.execution)) onFailure(this.lastFailed);
      }),
    );
  }

  /**
   * Listens to the command running in `terminal`: its command line and output so far, the rest going to
   * `listener`; undefined when nothing runs there (see `attachNext`).
   */
  attach(terminal: vscode.Terminal, listener: OutputListener): { commandLine: string; text: string } | undefined {
    const running = this.running.get(terminal);
    if (!running) return undefined;
    this.watched.add(running.execution);
    running.listeners.add(listener);
    return { commandLine: running.execution.commandLine.value, text: running.tail.text() };
  }

  /** Listens to the next command that starts in `terminal`, from its first byte. */
  attachNext(terminal: vscode.Terminal, listener: OutputListener): vscode.Disposable {
    this.armed.set(terminal, listener);
    return new vscode.Disposable(() => { if (this.armed.get(terminal) === listener) this.armed.delete(terminal); });
  }

  /** The command line of the command that started last in `terminal` and still runs. */
  commandLine(terminal: vscode.Terminal): string | undefined {
    return this.running.get(terminal)?.execution.commandLine.value;
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
    this.captures.clear();
    this.running.clear();
    this.armed.clear();
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
