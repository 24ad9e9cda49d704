import { posix } from 'node:path';
import { createTwoFilesPatch } from 'diff';
import type { Sandbox } from './types';
import { collectContext, packContext } from './build-context';
import { readTarEntries } from './archive';

/** Copies the host workspace into the container (copy mode: the user's files are never written). */
export async function copyWorkspaceIn(sandbox: Sandbox, hostPath: string, containerPath: string): Promise<void> {
  const files = collectContext(hostPath, { ignore: () => false });
  const mk = await sandbox.execArgv(['mkdir', '-p', containerPath], { timeoutMs: 30_000 });
  if (mk.exitCode !== 0) throw new Error(`could not create ${containerPath} in the sandbox: ${mk.output}`);
  await sandbox.putArchive(packContext(files), containerPath);
}

function isBinary(b: Buffer): boolean {
  return b.subarray(0, 8000).includes(0);
}

/**
 * The agent's changes to a copied workspace as a unified patch against the host workspace, in git
 * format so `git apply` (or `patch -p1`) in the host folder applies it. Empty when nothing changed.
 */
export async function workspacePatch(sandbox: Sandbox, hostPath: string, containerPath: string): Promise<string> {
  const tarStream = await sandbox.getArchive(containerPath.replace(/\/*$/, '/.'));
  const entries = await readTarEntries(tarStream);
  const inContainer = new Map<string, Buffer>();
  for (const e of entries) {
    if (e.type !== 'file') continue;
    // The archive of "<dir>/." names entries "./path".
    const rel = posix.normalize(e.name).replace(/^(\.\/)+/, '').replace(/^\.$/, '');
    if (rel) inContainer.set(rel, e.content);
  }
  const onHost = new Map<string, Buffer>();
  for (const f of collectContext(hostPath, { ignore: () => false })) if (f.kind === 'file') onHost.set(f.path, f.content!);

  const paths = [...new Set([...inContainer.keys(), ...onHost.keys()])].sort();
  const parts: string[] = [];
  for (const rel of paths) {
    const before = onHost.get(rel);
    const after = inContainer.get(rel);
    if (before && after && before.equals(after)) continue;
    const header = `diff --git a/${rel} b/${rel}\n${!before ? 'new file mode 100644\n' : !after ? 'deleted file mode 100644\n' : ''}`;
    if ((before && isBinary(before)) || (after && isBinary(after))) {
      parts.push(`${header}Binary files ${before ? `a/${rel}` : '/dev/null'} and ${after ? `b/${rel}` : '/dev/null'} differ\n`);
      continue;
    }
    const patch = createTwoFilesPatch(before ? `a/${rel}` : '/dev/null', after ? `b/${rel}` : '/dev/null', before?.toString('utf8') ?? '', after?.toString('utf8') ?? '', undefined, undefined, { context: 3 });
    // Drop the "=====" banner line; git apply wants the diff --git header instead.
    parts.push(header + patch.split('\n').slice(1).join('\n'));
  }
  return parts.join('');
}
