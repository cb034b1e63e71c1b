/**
 * The Python extension's active environment, when that extension is installed (optional: never an
 * extensionDependency). Only the small, stable part of its API is used.
 */
import * as vscode from 'vscode';

interface EnvironmentPath { id: string; path: string }
interface ResolvedEnvironment { executable: { uri?: vscode.Uri } }
interface PythonExtensionApi {
  environments?: {
    getActiveEnvironmentPath(resource?: vscode.Uri): EnvironmentPath;
    resolveEnvironment(env: EnvironmentPath | string): Promise<ResolvedEnvironment | undefined>;
    onDidChangeActiveEnvironmentPath: vscode.Event<unknown>;
  };
}

const PYTHON_EXTENSION = 'ms-python.python';

async function api(): Promise<PythonExtensionApi | undefined> {
  const ext = vscode.extensions.getExtension<PythonExtensionApi>(PYTHON_EXTENSION);
  if (!ext) return undefined;
  try {
    return ext.isActive ? ext.exports : await ext.activate();
  } catch {
    return undefined;
  }
}

/** The executable of the active environment for `resource`, or undefined. */
export async function activePythonExecutable(resource?: vscode.Uri): Promise<string | undefined> {
  const environments = (await api())?.environments;
  if (!environments) return undefined;
  try {
    const resolved = await environments.resolveEnvironment(environments.getActiveEnvironmentPath(resource));
    return resolved?.executable.uri?.fsPath;
  } catch {
    return undefined;
  }
}

/** Calls `listener` when the user selects another interpreter in the Python extension. */
export async function onDidChangePythonEnvironment(listener: () => void): Promise<vscode.Disposable | undefined> {
  const environments = (await api())?.environments;
  return environments?.onDidChangeActiveEnvironmentPath(() => { listener(); });
}
