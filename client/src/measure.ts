/**
 * "rootrank: Measure Checkpointing": asks once per workspace what to measure (a `module:factory` returning
 * (model, example_batch), or a Hugging Face config.json with batch size and sequence length), remembers
 * it in the workspace state, runs `rootrank.measure` on the server (cancellable) and shows the chart.
 */
import * as vscode from 'vscode';
import { makeNonce } from './report/html';
import { renderMeasureReport, toMeasureResult } from './report/measure';
import type { RootrankServer } from './server';

const KEY = 'rootrank.measure.input';

export interface MeasureInput { target?: string; hfConfig?: string; batchSize?: number; seqLen?: number; budget?: string }

async function askInput(previous: MeasureInput | undefined): Promise<MeasureInput | undefined> {
  const kind = await vscode.window.showQuickPick([
    { label: 'A factory', description: 'module:function returning (model, example_batch)', source: 'factory' as const },
    { label: 'A Hugging Face config.json', description: 'built on the meta device; never downloads', source: 'hf' as const },
  ], { title: 'rootrank: what to measure', ignoreFocusOut: true });
  if (!kind) return undefined;
  if (kind.source === 'factory') {
    const target = await vscode.window.showInputBox({
      title: 'rootrank: factory', ignoreFocusOut: true, prompt: 'module:function (relative to the workspace folder), e.g. mypkg.model:build',
      value: previous?.target ?? '', validateInput: v => /^[\w.]+:[\w.]+$/.test(v.trim()) ? undefined : 'MODULE:FUNCTION',
    });
    return target ? { target: target.trim() } : undefined;
  }
  const picked = await vscode.window.showOpenDialog({ canSelectMany: false, openLabel: 'Measure', filters: { 'config.json': ['json'] } });
  if (!picked?.[0]) return undefined;
  const number = async (title: string, value: number): Promise<number | undefined> => {
    const text = await vscode.window.showInputBox({ title, ignoreFocusOut: true, value: String(value), validateInput: v => /^[1-9]\d*$/.test(v.trim()) ? undefined : 'a positive integer' });
    return text ? Number(text) : undefined;
  };
  const batchSize = await number('rootrank: batch size', previous?.batchSize ?? 1);
  const seqLen = batchSize ? await number('rootrank: sequence length', previous?.seqLen ?? 4096) : undefined;
  return batchSize && seqLen ? { hfConfig: picked[0].fsPath, batchSize, seqLen } : undefined;
}

export async function measureCheckpointing(context: vscode.ExtensionContext, server: RootrankServer | undefined, ask = false): Promise<void> {
  if (!server) return;
  const remembered = context.workspaceState.get<MeasureInput>(KEY);
  const input = ask || !remembered ? await askInput(remembered) : remembered;
  if (!input) return;
  await context.workspaceState.update(KEY, input);
  try {
    const raw = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `rootrank: measuring ${input.target ?? input.hfConfig}`, cancellable: true },
      (_progress, token) => server.measure({ ...input }, token));
    if (raw === undefined) return;
    showMeasurement(toMeasureResult(raw));
  } catch (err) {
    const message = `rootrank: measurement failed: ${err instanceof Error ? err.message : String(err)}`;
    server.channel.error(message);
    const choice = await vscode.window.showErrorMessage(message.split('\n')[0] ?? message, 'Change What to Measure', 'Show Log');
    if (choice === 'Show Log') server.channel.show();
    if (choice === 'Change What to Measure') await measureCheckpointing(context, server, true);
  }
}

let panel: vscode.WebviewPanel | undefined;

function showMeasurement(result: ReturnType<typeof toMeasureResult>): void {
  if (!panel) {
    panel = vscode.window.createWebviewPanel('rootrank.measure', 'rootrank: checkpointing', vscode.ViewColumn.Beside, { enableScripts: false });
    panel.onDidDispose(() => { panel = undefined; });
  }
  panel.webview.html = renderMeasureReport(result, { nonce: makeNonce(), cspSource: panel.webview.cspSource });
  panel.reveal(undefined, true);
}
