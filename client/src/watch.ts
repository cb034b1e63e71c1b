/**
 * `rootrank watch` in the integrated terminal: a status bar item while the job runs ("3 ranks, step 1200,
 * ok" / "rank 1 stalled 95 s at train.py:15"), a notification when a stall or a cause is found, and a click
 * that opens the stacks or the report. The extension gives its terminals ROOTRANK_WATCH_STATUS_DIR; each
 * `rootrank watch` there keeps a status file in that folder, which this reads (a watcher and a 1 s poll).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { notificationDue, parseStatus, pickStatus, reportFile, statusBarText } from './watchStatus';
import type { WatchStatus } from './watchStatus';

const POLL_MS = 1000;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export class WatchStatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem('rootrank.watch', vscode.StatusBarAlignment.Left, 50);
  private readonly timer: NodeJS.Timeout;
  private watcher: fs.FSWatcher | undefined;
  private shown: WatchStatus | undefined;
  private readonly seen = new Map<number, WatchStatus>();

  constructor(context: vscode.ExtensionContext, readonly dir: string) {
    fs.mkdirSync(dir, { recursive: true });
    context.environmentVariableCollection.replace('ROOTRANK_WATCH_STATUS_DIR', dir);
    context.environmentVariableCollection.description = 'rootrank watch reports its jobs to the status bar';
    this.item.name = 'rootrank watch';
    this.item.command = 'rootrank.openWatchReport';
    try {
      this.watcher = fs.watch(dir, () => { this.refresh(); });
    } catch {
      this.watcher = undefined; // the poll below still works
    }
    this.timer = setInterval(() => { this.refresh(); }, POLL_MS);
    this.refresh();
  }

  statuses(): WatchStatus[] {
    let names: string[];
    try {
      names = fs.readdirSync(this.dir).filter(n => n.endsWith('.json'));
    } catch {
      return [];
    }
    const out: WatchStatus[] = [];
    for (const name of names) {
      try {
        const status = parseStatus(fs.readFileSync(path.join(this.dir, name), 'utf8'));
        if (status) out.push(status);
      } catch {
        // written or removed meanwhile: the next refresh sees it
      }
    }
    return out;
  }

  refresh(): void {
    const status = pickStatus(this.statuses(), Date.now() / 1000, alive);
    if (status) {
      const previous = this.seen.get(status.pid);
      this.seen.set(status.pid, status);
      if (notificationDue(previous, status)) void this.notify(status);
    }
    this.shown = status;
    if (!status) {
      this.item.hide();
      return;
    }
    this.item.text = statusBarText(status);
    this.item.tooltip = `${status.command.join(' ')}\n${status.text}${status.report ? `\nreport: ${status.report}` : ''}`;
    this.item.backgroundColor = status.state === 'stalled' ? new vscode.ThemeColor('statusBarItem.warningBackground')
      : status.state === 'failed' ? new vscode.ThemeColor('statusBarItem.errorBackground') : undefined;
    this.item.show();
  }

  private async notify(status: WatchStatus): Promise<void> {
    const choice = await vscode.window.showWarningMessage(`rootrank: ${status.text}`, 'Open Report');
    if (choice) await this.openReport(status);
  }

  async openReport(status: WatchStatus | undefined = this.shown): Promise<void> {
    if (!status?.report) {
      void vscode.window.showInformationMessage('rootrank: no report yet: the watched job has had no stall or failure.');
      return;
    }
    let files: string[];
    try {
      files = fs.readdirSync(status.report);
    } catch {
      files = [];
    }
    const file = reportFile(status, files);
    if (!file) {
      void vscode.window.showInformationMessage(`rootrank: nothing in ${status.report} yet.`);
      return;
    }
    const document = await vscode.workspace.openTextDocument(vscode.Uri.file(path.join(status.report, file)));
    await vscode.window.showTextDocument(document, { preview: true });
  }

  dispose(): void {
    clearInterval(this.timer);
    this.watcher?.close();
    this.item.dispose();
  }
}
