import { isUtf8 } from 'node:buffer';
import { posix } from 'node:path';
import { createTwoFilesPatch } from 'diff';
import type { Sandbox } from './types';
import { collectContext, packContext } from './build-context';
import { readTarEntries } from './archive';
import { gitignoreMatcher } from './gitignore';
import { binaryPatchBody } from './git-binary-patch';

/** Copies the host workspace into the container (copy mode: the user's files are never written). */
export async function copyWorkspaceIn(sandbox: Sandbox, hostPath: string, containerPath: string): Promise<void> {
  const files = collectContext(hostPath, { ignore: () => false });
  const mk = await sandbox.execArgv(['mkdir', '-p', containerPath], { timeoutMs: 30_000 });
  if (mk.exitCode !== 0) throw new Error(`could not create ${containerPath} in the sandbox: ${mk.output}`);
  await sandbox.putArchive(packContext(files), containerPath);
}

function isBinary(b: Buffer): boolean {
  // Not UTF-8 counts too: a text diff of such a file would not give back its bytes.
  return b.subarray(0, 8000).includes(0) || !isUtf8(b);
}

/**
 * The agent's changes to a copied workspace as a unified patch against the host workspace, in git
 * format so `git apply` in the host folder applies it (binary files as full-index binary patches).
 * Paths the host's .gitignore files or the default cache list ignore are left out: the host's rules,
 * not the container's, so an agent cannot hide a change by editing .gitignore. Empty when nothing changed.
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

  const gitignores = new Map([...onHost].filter(([p]) => posix.basename(p) === '.gitignore').map(([p, c]) => [p, c.toString('utf8')]));
  const ignored = gitignoreMatcher(gitignores);
  const paths = [...new Set([...inContainer.keys(), ...onHost.keys()])].filter((p) => !ignored(p)).sort();
  const parts: string[] = [];
  for (const rel of paths) {
    const before = onHost.get(rel);
    const after = inContainer.get(rel);
    if (before && after && before.equals(after)) continue;
    const header = `diff --git a/${rel} b/${rel}\n${!before ? 'new file mode 100644\n' : !after ? 'deleted file mode 100644\n' : ''}`;
    if ((before && isBinary(before)) || (after && isBinary(after))) {
      parts.push(header + binaryPatchBody(before, after));
      continue;
    }
    const patch = createTwoFilesPatch(before ? `a/${rel}` : '/dev/null', after ? `b/${rel}` : '/dev/null', before?.toString('utf8') ?? '', after?.toString('utf8') ?? '', undefined, undefined, { context: 3 });
    // Drop the "=====" banner line; git apply wants the diff --git header instead.
    parts.push(header + patch.split('\n').slice(1).join('\n'));
  }
  return parts.join('');
}
