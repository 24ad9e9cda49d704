import { countLines, lineHunks } from './linediff';
import type { FileContent } from './file-content';
import type { FileWrite } from './types';

/**
 * Turns the paths a command may have changed into line-level FileWrites by comparing each file's
 * content now with its content before. A path that does not exist before or after (a temp file
 * renamed away, a lock file) is no write; a directory is no write; identical content gives a write
 * with no hunks (the contract for overwrites with the same bytes).
 */
export async function resolveWrites(
  paths: readonly string[],
  after: (paths: readonly string[]) => Promise<FileContent[]>,
  before: (paths: readonly string[]) => Promise<FileContent[]>,
  maxFiles: number,
  remember?: (path: string, content: FileContent) => void,
): Promise<{ writes: FileWrite[]; notes: string[] }> {
  const unique = [...new Set(paths)];
  const notes: string[] = [];
  const todo = unique.slice(0, maxFiles);
  if (unique.length > maxFiles) notes.push(`${unique.length - maxFiles} written files beyond the cap of ${maxFiles} were not diffed: ${unique.slice(maxFiles, maxFiles + 5).join(', ')}…`);
  if (todo.length === 0) return { writes: [], notes };
  const notDiffed: string[] = [];
  let nows: FileContent[];
  let thens: FileContent[];
  try {
    [nows, thens] = await Promise.all([after(todo), before(todo)]);
  } catch (err) {
    notes.push(`written files could not be read: ${(err as Error).message.split('\n')[0]}`);
    return { writes: [], notes };
  }
  const writes: FileWrite[] = [];
  todo.forEach((path, i) => {
    remember?.(path, nows[i]);
    const w = toWrite(path, thens[i], nows[i], notDiffed);
    if (w) writes.push(w);
  });
  if (notDiffed.length) notes.push(`not diffed: ${notDiffed.slice(0, 10).join(', ')}${notDiffed.length > 10 ? '…' : ''}`);
  return { writes, notes };
}

function toWrite(path: string, then: FileContent, now: FileContent, notDiffed: string[]): FileWrite | undefined {
  if (now.kind === 'other') {
    if (now.why !== 'directory') notDiffed.push(`${path} (${now.why})`);
    return undefined;
  }
  // latin1 maps every byte to one char: line splitting is exact for any encoding, and fast.
  const beforeText = then.kind === 'file' ? then.content.toString('latin1') : '';
  if (now.kind === 'absent') {
    if (then.kind !== 'file') return undefined;
    return { path, hunks: lineHunks(beforeText, ''), deleted: true, linesAfter: 0 };
  }
  const afterText = now.content.toString('latin1');
  const write: FileWrite = { path, hunks: lineHunks(beforeText, afterText), linesAfter: countLines(afterText) };
  if (then.kind !== 'file') write.created = true;
  return write;
}
