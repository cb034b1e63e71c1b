/**
 * rootrank for VS Code: a thin client over `python -m rootrank lsp`. Diagnostics, hover, quick fixes and
 * fix-all come from the server through vscode-languageclient. This file adds the ways to hand the server a
 * failure to diagnose (selection, terminal, clipboard, log file) and shows the result in the report webview.
 */
import * as path from 'node:path';
import * as vscode from 'vscode';
import { registerCaptureProvider } from './capture';
import { measureCheckpointing } from './measure';
import { onDidChangePythonEnvironment } from './python';
import { ReportPanel } from './report/panel';
import type { Origin } from './report/panel';
import { RootrankServer } from './server';
import { readClientSettings, RESTART_SETTINGS } from './settings';
import { TerminalWatcher, terminalSelection } from './terminal';
import type { FailedCommand } from './terminal';
import { shortCommand, stripAnsi } from './text';
import type { Diagnosis } from './types';
import { FailedLogsView } from './failedLogs';
import { WatchStatusBar } from './watch';
import { TerminalWatches } from './watchTerminal';

let server: RootrankServer | undefined;

async function run(text: string, uri?: vscode.Uri): Promise<Diagnosis | undefined> {
  if (!server) return undefined;
  try {
    return await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Window, title: 'rootrank: diagnosing…' },
      () => server!.diagnose(text, uri));
  } catch (err) {
    const message = `rootrank: diagnosis failed: ${err instanceof Error ? err.message : String(err)}`;
    server.channel.error(message);
    void vscode.window.showErrorMessage(message, 'Show Log').then(c => { if (c) server?.channel.show(); });
    return undefined;
  }
}

async function diagnoseAndShow(text: string, origin: Origin, uri?: vscode.Uri): Promise<void> {
  if (!text.trim() && !uri) {
    void vscode.window.showInformationMessage(`rootrank: nothing to diagnose (${origin.label} is empty).`);
    return;
  }
  const diagnosis = await run(text, uri);
  if (diagnosis) ReportPanel.show(diagnosis, origin);
}

function baseName(uri: vscode.Uri): string {
  return path.basename(uri.path) || uri.toString();
}

async function diagnoseSelection(): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (!editor) {
    void vscode.window.showInformationMessage('rootrank: select a traceback or log in an editor first (or use "Diagnose Clipboard").');
    return;
  }
  const doc = editor.document;
  const selection = editor.selection;
  if (selection.isEmpty) {
    // No selection: the whole document.
    await diagnoseAndShow(doc.getText(), { label: `all of ${baseName(doc.uri)}`, uri: doc.uri, lineOffset: 0 });
    return;
  }
  // Whole lines, so line numbers in the report map back to the document; a selection ending at the start
  // of a line (Select All, triple-click) does not include that line.
  const endLine = selection.end.character === 0 && selection.end.line > selection.start.line ? selection.end.line - 1 : selection.end.line;
  const range = new vscode.Range(selection.start.line, 0, endLine, doc.lineAt(endLine).text.length);
  const text = doc.getText(range);
  await diagnoseAndShow(text, {
    label: `selection in ${baseName(doc.uri)}, lines ${range.start.line + 1}–${range.end.line + 1}`,
    uri: doc.uri, lineOffset: range.start.line,
  });
}

function terminalOrigin(f: FailedCommand): Origin {
  return {
    label: `terminal "${f.terminal.name}": ${shortCommand(f.commandLine)} (exit ${f.exitCode})`,
    text: stripAnsi(f.output), name: 'terminal output',
  };
}

async function diagnoseTerminal(watcher: TerminalWatcher): Promise<void> {
  const failed = watcher.lastFailed;
  if (failed) {
    await diagnoseAndShow(failed.output, terminalOrigin(failed));
    return;
  }
  // No failed command seen (no shell integration?): fall back to the terminal's selection.
  const text = vscode.window.activeTerminal ? await terminalSelection() : '';
  if (text.trim()) {
    await diagnoseAndShow(text, { label: 'terminal selection', text: stripAnsi(text), name: 'terminal selection' });
  } else {
    void vscode.window.showInformationMessage(
      'rootrank: no failed terminal command seen yet. Run the command in a terminal with shell integration, or select its output and use "Diagnose Terminal Selection".');
  }
}

async function diagnoseTerminalSelection(): Promise<void> {
  const text = await terminalSelection();
  if (!text.trim()) {
    void vscode.window.showInformationMessage('rootrank: select the failure in the terminal first.');
    return;
  }
  await diagnoseAndShow(text, { label: 'terminal selection', text: stripAnsi(text), name: 'terminal selection' });
}

async function diagnoseClipboard(): Promise<void> {
  const text = await vscode.env.clipboard.readText();
  await diagnoseAndShow(text, { label: 'clipboard', text, name: 'clipboard' });
}

async function diagnoseFile(uri?: vscode.Uri): Promise<void> {
  let target = uri instanceof vscode.Uri ? uri : vscode.window.activeTextEditor?.document.uri;
  if (!target) {
    const picked = await vscode.window.showOpenDialog({ canSelectMany: false, openLabel: 'Diagnose',
      filters: { 'Logs': ['log', 'out', 'err', 'txt'], 'All files': ['*'] } });
    target = picked?.[0];
  }
  if (!target) return;
  const open = vscode.workspace.textDocuments.find(d => d.uri.toString() === target.toString());
  // An open document is sent as text (it may be unsaved); otherwise the server reads the file itself.
  await diagnoseAndShow(open ? open.getText() : '', { label: baseName(target), uri: target, lineOffset: 0 }, target);
}

// A real failure bundled with the extension (a 2-rank HF Trainer run whose rank 0 was SIGKILLed while it
// wrote a checkpoint), so a new user sees a report before their own run fails.
const SAMPLE_LOG = 'client/samples/hf-trainer-2-ranks-killed-during-checkpoint-save.log';

async function trySample(context: vscode.ExtensionContext): Promise<void> {
  const uri = vscode.Uri.file(context.asAbsolutePath(SAMPLE_LOG));
  await vscode.window.showTextDocument(uri, { preview: true, preserveFocus: true });
  await diagnoseFile(uri);
}

async function onTerminalFailure(failed: FailedCommand): Promise<void> {
  const settings = readClientSettings(vscode.workspace.getConfiguration('rootrank'));
  if (!settings.notifyOnTerminalFailure || !server) return;
  let diagnosis: Diagnosis | undefined;
  try {
    diagnosis = await server.diagnose(failed.output);
  } catch (err) {
    server.channel.warn(`terminal output not diagnosed: ${err instanceof Error ? err.message : String(err)}`);
    return;
  }
  // Only failures rootrank recognises are worth interrupting for; the command stays available for the rest.
  if (!diagnosis || (!diagnosis.root_cause && diagnosis.candidates.length === 0)) return;
  const rc = diagnosis.root_cause;
  const what = rc ? `${rc.title}${rc.rank !== null ? ` on rank ${rc.rank}` : ''}` : `${diagnosis.candidates.length} candidate causes`;
  const choice = await vscode.window.showWarningMessage(
    `rootrank: "${shortCommand(failed.commandLine, 40)}" failed (exit ${failed.exitCode}): ${what}`, 'Diagnose');
  if (choice === 'Diagnose') ReportPanel.show(diagnosis, terminalOrigin(failed));
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const channel = vscode.window.createOutputChannel('rootrank', { log: true });
  server = new RootrankServer(context, channel);
  const watcher = new TerminalWatcher(f => void onTerminalFailure(f));
  const command = (id: string, fn: (...args: never[]) => Promise<void> | void) =>
    vscode.commands.registerCommand(id, fn as (...args: unknown[]) => unknown);

  context.subscriptions.push(
    channel, server, watcher, registerCaptureProvider(),
    command('rootrank.diagnoseSelection', diagnoseSelection),
    command('rootrank.diagnoseTerminal', () => diagnoseTerminal(watcher)),
    command('rootrank.diagnoseTerminalSelection', diagnoseTerminalSelection),
    command('rootrank.diagnoseClipboard', diagnoseClipboard),
    command('rootrank.diagnoseFile', (uri?: vscode.Uri) => diagnoseFile(uri)),
    command('rootrank.measureCheckpointing', () => measureCheckpointing(context, server)),
    command('rootrank.restart', async () => { await server?.restart(); }),
    command('rootrank.showLog', () => { channel.show(); }),
    command('rootrank.trySample', () => trySample(context)),
    vscode.window.registerWebviewPanelSerializer('rootrank.report', {
      deserializeWebviewPanel: (panel, state) => { ReportPanel.restore(panel, state); return Promise.resolve(); },
    }),
    vscode.workspace.onDidChangeConfiguration(async e => {
      if (!e.affectsConfiguration('rootrank')) return;
      if (RESTART_SETTINGS.some(s => e.affectsConfiguration(s)) || e.affectsConfiguration('rootrank.logFilePatterns')) {
        await server?.restart();
      } else {
        await server?.pushSettings();
      }
    }),
  );
  // rootrank watch in the integrated terminal: its status in the status bar.
  const watchBar = new WatchStatusBar(context, path.join(context.globalStorageUri.fsPath, 'watch'));
  context.subscriptions.push(watchBar, command('rootrank.openWatchReport', () => watchBar.openReport()));
  // rootrank: Watch Terminal: a command already running in a terminal, handed to `rootrank watch -`.
  const terminalWatches = new TerminalWatches(watcher, server, watchBar.dir);
  context.subscriptions.push(terminalWatches, command('rootrank.watchTerminal', () => terminalWatches.watchActive()));
  // The workspace's failed logs, in a tree view (the server finds and reads them).
  const failedLogs = new FailedLogsView(server);
  context.subscriptions.push(failedLogs, command('rootrank.scanWorkspace', async () => {
    await failedLogs.reveal();
    await failedLogs.scan();
  }));
  const sub = await onDidChangePythonEnvironment(() => void server?.restart());
  if (sub) context.subscriptions.push(sub);
  // Trust granted: the workspace's own rootrank.interpreter now applies (after the prompt on its first use).
  context.subscriptions.push(vscode.workspace.onDidGrantWorkspaceTrust(() => void server?.restart()));
  await server.ready();
}

export async function deactivate(): Promise<void> {
  await server?.stop();
  server = undefined;
}
