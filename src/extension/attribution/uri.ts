import * as vscode from 'vscode';

export const CONTAINER_SCHEME = 'tbrl-container';

/** `final`: the file as the run left it (`<run>/files/`); `original`: as the image had it (`<run>/originals/`). */
export type ContainerSide = 'final' | 'original';

/**
 * `tbrl-container:/<run id>/app/x.py?run=<run dir>` (final) or `…&side=original`: the run id keeps
 * tabs of two runs apart, the query says where the snapshot is and which side of the diff this is.
 */
export function containerUri(runDir: string, runId: string, containerPath: string, side: ContainerSide = 'final'): vscode.Uri {
  const query = `run=${encodeURIComponent(runDir)}${side === 'original' ? '&side=original' : ''}`;
  return vscode.Uri.from({ scheme: CONTAINER_SCHEME, path: `/${encodeSegment(runId)}${containerPath.startsWith('/') ? '' : '/'}${containerPath}`, query });
}

export interface ParsedContainerUri {
  runDir: string;
  runId: string;
  /** Absolute path inside the container. */
  path: string;
  side: ContainerSide;
}

export function parseContainerUri(uri: vscode.Uri): ParsedContainerUri | undefined {
  const query = new URLSearchParams(uri.query);
  const run = query.get('run');
  const m = /^\/([^/]+)(\/.*)?$/.exec(uri.path);
  if (!run || !m) return undefined;
  return { runDir: run, runId: m[1], path: m[2] ?? '/', side: query.get('side') === 'original' ? 'original' : 'final' };
}

function encodeSegment(s: string): string {
  return s.replace(/[/\\?#]/g, '_') || 'run';
}
