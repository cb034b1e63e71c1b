/**
 * The "rootrank: Failed Logs" tree view: the workspace's log files that hold a failure, each with its root
 * cause; a click diagnoses the file (the report). The server finds and reads the files
 * (`rootrank.scanLogs`, bounded and cancellable); this only shows its answer. No vscode-free logic
 * worth a unit test lives here: the shaping of the answer is in failedLogsModel.ts.
 */
import * as vscode from 'vscode';
import { parseScan, describe } from './failedLogsModel';
import type { FailedLog, ScanAnswer, SkippedLog } from './failedLogsModel';
import type { RootrankServer } from './server';

type Node = { kind: 'failure'; failure: FailedLog } | { kind: 'skipped-group'; skipped: SkippedLog[] }
  | { kind: 'skipped'; skipped: SkippedLog };

export class FailedLogsView implements vscode.TreeDataProvider<Node>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<Node | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly view: vscode.TreeView<Node>;
  private answer: ScanAnswer | undefined;
  private scanning: vscode.CancellationTokenSource | undefined;
  private readonly disposables: { dispose(): unknown }[] = [];

  constructor(private readonly server: RootrankServer | undefined) {
    this.view = vscode.window.createTreeView('rootrank.failedLogs', { treeDataProvider: this });
    this.disposables.push(this.view, this.changed, this.view.onDidChangeVisibility(e => {
      if (e.visible && !this.answer && !this.scanning) void this.scan();
    }));
  }

  async scan(): Promise<void> {
    if (!this.server) return;
    this.scanning?.cancel();
    const source = new vscode.CancellationTokenSource();
    this.scanning = source;
    const cfg = vscode.workspace.getConfiguration('rootrank', vscode.workspace.workspaceFolders?.[0]?.uri);
    const options = {
      include: cfg.get<string[]>('workspaceScan.include'),
      exclude: cfg.get<string[]>('workspaceScan.exclude'),
      maxFiles: cfg.get<number>('workspaceScan.maxFiles'),
      maxFileBytes: (cfg.get<number>('workspaceScan.maxFileMiB') ?? 64) * 1024 * 1024,
    };
    this.view.message = 'Scanning the workspace\'s log files…';
    try {
      const answer = parseScan(await vscode.window.withProgress(
        { location: { viewId: 'rootrank.failedLogs' } }, () => this.server!.scanWorkspace(options, source.token)));
      if (this.scanning !== source) return; // a newer scan runs
      this.answer = answer;
      this.view.message = answer ? describe(answer) : 'rootrank: the scan gave no answer (see "rootrank: Show Server Log").';
      this.view.badge = answer?.failures.length ? { value: answer.failures.length, tooltip: `${answer.failures.length} failed logs` } : undefined;
    } catch (err) {
      if (this.scanning === source) this.view.message = `Scan failed: ${err instanceof Error ? err.message : String(err)}`;
    } finally {
      if (this.scanning === source) this.scanning = undefined;
      source.dispose();
    }
    this.changed.fire(undefined);
  }

  async reveal(): Promise<void> {
    await vscode.commands.executeCommand('rootrank.failedLogs.focus');
  }

  getChildren(node?: Node): Node[] {
    if (!node) {
      if (!this.answer) return [];
      const nodes: Node[] = this.answer.failures.map(failure => ({ kind: 'failure', failure }));
      if (this.answer.skipped.length) nodes.push({ kind: 'skipped-group', skipped: this.answer.skipped });
      return nodes;
    }
    return node.kind === 'skipped-group' ? node.skipped.map(skipped => ({ kind: 'skipped', skipped })) : [];
  }

  getTreeItem(node: Node): vscode.TreeItem {
    if (node.kind === 'failure') {
      const f = node.failure;
      const uri = vscode.Uri.parse(f.uri);
      const item = new vscode.TreeItem(vscode.workspace.asRelativePath(uri, false), vscode.TreeItemCollapsibleState.None);
      item.description = `${f.rank !== null ? `rank ${f.rank}: ` : ''}${f.title}${f.host ? ` (${f.host})` : ''}`;
      item.tooltip = new vscode.MarkdownString().appendText(`${f.title} [${f.rule}]\n`).appendCodeblock(f.evidence, 'log');
      item.iconPath = new vscode.ThemeIcon('error', new vscode.ThemeColor('errorForeground'));
      item.resourceUri = uri;
      item.contextValue = 'rootrank.failedLog';
      item.command = { command: 'rootrank.diagnoseFile', title: 'Diagnose Log File', arguments: [uri] };
      return item;
    }
    if (node.kind === 'skipped-group') {
      const item = new vscode.TreeItem(`${node.skipped.length} not read`, vscode.TreeItemCollapsibleState.Collapsed);
      item.iconPath = new vscode.ThemeIcon('info');
      return item;
    }
    const uri = vscode.Uri.file(node.skipped.path);
    const item = new vscode.TreeItem(vscode.workspace.asRelativePath(uri, false), vscode.TreeItemCollapsibleState.None);
    item.description = node.skipped.reason;
    item.resourceUri = uri;
    item.command = { command: 'vscode.open', title: 'Open', arguments: [uri] };
    return item;
  }

  dispose(): void {
    this.scanning?.cancel();
    for (const d of this.disposables) d.dispose();
  }
}
