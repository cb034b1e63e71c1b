/** The report webview: one panel, reused; messages from its script are handled here. */
import * as vscode from 'vscode';
import { captureUri } from '../capture';
import { isSafeUrl } from './markdown';
import { makeNonce, renderReport } from './html';
import { renderTimeline } from './timeline';
import { toDiagnosis } from '../types';
import type { Diagnosis } from '../types';

/** Where the diagnosed text came from, so evidence lines can be revealed. */
export interface Origin {
  /** Shown under the title: "selection in train.log", "terminal: python train.py (exit 1)". */
  label: string;
  /** The document the text is part of; absent for terminal and clipboard text. */
  uri?: vscode.Uri;
  /** 0-based line in `uri` where the diagnosed text starts (a selection's first line). */
  lineOffset?: number;
  /** The text itself, opened read-only when there is no `uri`. */
  text?: string;
  /** The name the captured text is shown under ("terminal output", "clipboard"). */
  name?: string;
}

/** What the webview keeps (vscode.setState) so VS Code can restore the report after a reload. */
interface SavedReport {
  version: 1;
  diagnosis: unknown;
  origin: { label: string; uri?: string; lineOffset?: number; text?: string; name?: string };
}

const MAX_SAVED_TEXT = 1024 * 1024;

type Message =
  | { type: 'reveal'; line: number }
  | { type: 'open'; href: string }
  | { type: 'resize'; width: unknown }
  | { type: 'copyMarkdown' | 'copyVerify' | 'runVerify' };

export class ReportPanel {
  private static current: ReportPanel | undefined;
  private diagnosis!: Diagnosis;
  private origin!: Origin;
  private scratch: vscode.TextDocument | undefined;

  private constructor(private readonly panel: vscode.WebviewPanel) {
    panel.onDidDispose(() => { if (ReportPanel.current === this) ReportPanel.current = undefined; });
    panel.webview.onDidReceiveMessage((m: Message) => this.onMessage(m).catch((err: unknown) =>
      void vscode.window.showErrorMessage(`rootrank: ${err instanceof Error ? err.message : String(err)}`)));
  }

  /** Restores a report after a window reload (WebviewPanelSerializer); closes the panel if the state is unusable. */
  static restore(panel: vscode.WebviewPanel, state: unknown): void {
    const saved = state as Partial<SavedReport> | undefined;
    let diagnosis: Diagnosis;
    try {
      if (saved?.version !== 1 || !saved.origin) throw new Error('no saved report');
      diagnosis = toDiagnosis(saved.diagnosis);
    } catch {
      panel.dispose();
      return;
    }
    panel.webview.options = { enableScripts: true, localResourceRoots: [] };
    ReportPanel.current?.panel.dispose();
    const report = ReportPanel.current = new ReportPanel(panel);
    const o = saved.origin;
    report.update(diagnosis, {
      label: o.label, uri: o.uri ? vscode.Uri.parse(o.uri, true) : undefined, lineOffset: o.lineOffset, text: o.text, name: o.name,
    });
  }

  static show(diagnosis: Diagnosis, origin: Origin): ReportPanel {
    let report = ReportPanel.current;
    if (!report) {
      const panel = vscode.window.createWebviewPanel('rootrank.report', 'rootrank report', {
        viewColumn: vscode.ViewColumn.Beside, preserveFocus: false,
      }, { enableScripts: true, localResourceRoots: [], enableFindWidget: true });
      report = ReportPanel.current = new ReportPanel(panel);
    }
    report.update(diagnosis, origin);
    report.panel.reveal(undefined, false);
    return report;
  }

  private update(diagnosis: Diagnosis, origin: Origin): void {
    this.diagnosis = diagnosis;
    this.origin = origin;
    this.scratch = undefined;
    const rc = diagnosis.root_cause;
    this.panel.title = rc ? `rootrank: ${rc.title}${rc.rank !== null ? ` (rank ${rc.rank})` : ''}` : 'rootrank report';
    this.panel.webview.html = renderReport(diagnosis, {
      nonce: makeNonce(), cspSource: this.panel.webview.cspSource, origin: origin.label,
      canReveal: this.canReveal(),
      state: {
        version: 1, diagnosis,
        origin: {
          label: origin.label, uri: origin.uri?.toString(), lineOffset: origin.lineOffset, name: origin.name,
          text: origin.text !== undefined && origin.text.length <= MAX_SAVED_TEXT ? origin.text : undefined,
        },
      } satisfies SavedReport,
    });
  }

  private canReveal(): boolean {
    return !!(this.origin.uri || this.origin.text !== undefined);
  }

  private async onMessage(m: Message): Promise<void> {
    switch (m.type) {
      case 'reveal': return this.reveal(m.line);
      case 'resize': {
        // redraw the timeline at the figure's width (the builder escapes everything it draws)
        const width = Math.max(320, Math.min(1100, Math.round(typeof m.width === 'number' && Number.isFinite(m.width) ? m.width : 520)));
        const svg = renderTimeline(this.diagnosis, { width, clickable: this.canReveal() });
        await this.panel.webview.postMessage({ type: 'timeline', svg });
        return;
      }
      case 'open':
        if (isSafeUrl(m.href)) await vscode.env.openExternal(vscode.Uri.parse(m.href, true));
        return;
      case 'copyMarkdown':
        await vscode.env.clipboard.writeText(this.diagnosis.markdown);
        vscode.window.setStatusBarMessage('rootrank: report copied as Markdown', 3000);
        return;
      case 'copyVerify':
        await vscode.env.clipboard.writeText(this.diagnosis.root_cause?.verify ?? '');
        vscode.window.setStatusBarMessage('rootrank: verify command copied', 3000);
        return;
      case 'runVerify': return this.runVerify();
    }
  }

  private async reveal(line: number): Promise<void> {
    if (!Number.isInteger(line) || line < 1) return;
    let doc: vscode.TextDocument;
    let target = line - 1;
    if (this.origin.uri) {
      doc = await vscode.workspace.openTextDocument(this.origin.uri);
      target += this.origin.lineOffset ?? 0;
    } else if (this.origin.text !== undefined) {
      this.scratch ??= await vscode.workspace.openTextDocument(captureUri(this.origin.text, this.origin.name ?? 'captured'));
      doc = this.scratch;
    } else {
      return;
    }
    target = Math.min(target, doc.lineCount - 1);
    const range = doc.lineAt(target).range;
    await vscode.window.showTextDocument(doc, {
      viewColumn: vscode.ViewColumn.One, selection: new vscode.Selection(range.start, range.end), preserveFocus: false,
    });
    const editor = vscode.window.activeTextEditor;
    editor?.revealRange(range, vscode.TextEditorRevealType.InCenterIfOutsideViewport);
  }

  private async runVerify(): Promise<void> {
    const command = this.diagnosis.root_cause?.verify.trim();
    if (!command) return;
    const choice = await vscode.window.showWarningMessage('Run the verify command in a new terminal?',
      { modal: true, detail: command }, 'Run');
    if (choice !== 'Run') return;
    const terminal = vscode.window.createTerminal({ name: 'rootrank verify', cwd: vscode.workspace.workspaceFolders?.[0]?.uri });
    terminal.show();
    terminal.sendText(command, true);
  }
}
