import * as vscode from 'vscode';

export const CONTAINER_SCHEME = 'tbrl-container';

/** `tbrl-container:/<run id>/app/x.py?run=<run dir>`: the run id keeps tabs of two runs apart, the query says where the snapshot is. */
export function containerUri(runDir: string, runId: string, containerPath: string): vscode.Uri {
  return vscode.Uri.from({ scheme: CONTAINER_SCHEME, path: `/${encodeSegment(runId)}${containerPath.startsWith('/') ? '' : '/'}${containerPath}`, query: `run=${encodeURIComponent(runDir)}` });
}

export interface ParsedContainerUri {
  runDir: string;
  runId: string;
  /** Absolute path inside the container. */
  path: string;
}

export function parseContainerUri(uri: vscode.Uri): ParsedContainerUri | undefined {
  const run = new URLSearchParams(uri.query).get('run');
  const m = /^\/([^/]+)(\/.*)?$/.exec(uri.path);
  if (!run || !m) return undefined;
  return { runDir: run, runId: m[1], path: m[2] ?? '/' };
}

function encodeSegment(s: string): string {
  return s.replace(/[/\\?#]/g, '_') || 'run';
}
