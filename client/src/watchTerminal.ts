/**
 * "rootrank: Watch Terminal": the command running in the active terminal, read through shell integration,
 * goes to `rootrank watch -` (the same watch as `rootrank watch -- CMD`: live diagnosis, stall detection,
 * stacks of the terminal's processes). That watch writes its status file where the status bar looks
 * (watch.ts), so the status bar item and the notification are those of any watched job.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import * as vscode from 'vscode';
import type { RootrankServer } from './server';
import type { OutputListener, TerminalWatcher } from './terminal';
import { shortCommand } from './text';

const NO_SHELL_INTEGRATION = 'rootrank: shell integration is not active in this terminal, so its output cannot be read. '
  + 'Enable "terminal.integrated.shellIntegration.enabled" and open a new terminal (bash, zsh, fish or pwsh), '
  + 'or start the job as `rootrank watch -- CMD ...` in the terminal.';

/** One terminal command handed to `rootrank watch -`. */
class TerminalWatch {
  private process: ChildProcess | undefined;
  private pending: string[] = [];
  private ended = false;

  constructor(private readonly server: RootrankServer, private readonly statusDir: string) {}

  async start(commandLine: string, shellPid: number | undefined, before: string): Promise<boolean> {
    const args = ['watch', '-', '--color', 'never', '--label', commandLine || 'terminal command'];
    if (shellPid !== undefined) args.push('--pid', String(shellPid)); // the job's processes are under the shell
    const launch = await this.server.rootrankCommand(args);
    if (!launch) return false;
    const child = spawn(launch.command, launch.args, {
      env: { ...launch.env, ROOTRANK_WATCH_STATUS_DIR: this.statusDir },
      stdio: ['pipe', 'ignore', 'pipe'],
    });
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (text: string) => { for (const line of text.split('\n')) if (line.trim()) this.server.channel.info(`watch: ${line}`); });
    child.on('error', err => { this.server.channel.error(`rootrank watch did not start: ${err.message}`); });
    child.stdin.on('error', () => undefined); // the watch ended first: nothing more to hand it
    this.process = child;
    if (before) child.stdin.write(before);
    for (const chunk of this.pending) child.stdin.write(chunk);
    this.pending = [];
    if (this.ended) child.stdin.end();
    return true;
  }

  readonly listener: OutputListener = chunk => {
    if (chunk === undefined) {
      this.ended = true;
      this.process?.stdin?.end();
    } else if (this.process) {
      this.process.stdin?.write(chunk);
    } else {
      this.pending.push(chunk); // arrived while the watch was starting
    }
  };

  stop(): void {
    this.process?.stdin?.end();
  }
}

export class TerminalWatches implements vscode.Disposable {
  private readonly watches = new Set<TerminalWatch>();
  private readonly waiting: vscode.Disposable[] = [];

  constructor(private readonly watcher: TerminalWatcher, private readonly server: RootrankServer | undefined,
    private readonly statusDir: string) {}

  async watchActive(): Promise<void> {
    const terminal = vscode.window.activeTerminal;
    if (!terminal) {
      void vscode.window.showInformationMessage('rootrank: open the terminal that runs your job first, then run "rootrank: Watch Terminal".');
      return;
    }
    if (!this.server) return;
    const shellPid = await terminal.processId;
    const watch = new TerminalWatch(this.server, this.statusDir);
    const attached = this.watcher.attach(terminal, watch.listener);
    if (!attached) {
      if (!terminal.shellIntegration) {
        void vscode.window.showWarningMessage(NO_SHELL_INTEGRATION);
        return;
      }
      // Nothing runs there now: the next command, from its first line.
      let started = false;
      this.waiting.push(this.watcher.attachNext(terminal, chunk => {
        if (!started) {
          started = true;
          this.watches.add(watch);
          void watch.start(this.watcher.commandLine(terminal) ?? '', shellPid, '').then(ok => { if (!ok) this.watches.delete(watch); });
        }
        watch.listener(chunk);
      }));
      void vscode.window.showInformationMessage(`rootrank: no command runs in terminal "${terminal.name}" now; the next one started there is watched.`);
      return;
    }
    this.watches.add(watch);
    const ok = await watch.start(attached.commandLine, shellPid, attached.text);
    if (!ok) {
      this.watches.delete(watch);
      return;
    }
    void vscode.window.setStatusBarMessage(`rootrank: watching "${shortCommand(attached.commandLine, 40)}"`, 5000);
  }

  dispose(): void {
    for (const w of this.waiting) w.dispose();
    for (const watch of this.watches) watch.stop();
    this.watches.clear();
  }
}
