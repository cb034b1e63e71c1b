/**
 * Read-only documents holding captured text (terminal output, clipboard), so evidence lines in a report can be
 * revealed even when the text has no file. Kept in memory only, a few at a time; never written anywhere.
 */
import * as vscode from 'vscode';

export const CAPTURE_SCHEME = 'rootrank-capture';
const KEEP = 20;
const texts = new Map<string, string>();
let counter = 0;

export function registerCaptureProvider(): vscode.Disposable {
  return vscode.workspace.registerTextDocumentContentProvider(CAPTURE_SCHEME, {
    provideTextDocumentContent: uri => texts.get(uri.query) ?? '',
  });
}

/** A URI for `text`, shown as `<name>.log` (the `.log` suffix gives it the log language). */
export function captureUri(text: string, name: string): vscode.Uri {
  const id = String(++counter);
  texts.set(id, text);
  for (const key of texts.keys()) {
    if (texts.size <= KEEP) break;
    texts.delete(key);
  }
  const safe = name.replace(/[^\w .()-]+/g, ' ').trim().slice(0, 60) || 'captured';
  return vscode.Uri.from({ scheme: CAPTURE_SCHEME, path: `/${safe}.log`, query: id });
}
