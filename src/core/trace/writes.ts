import { countLines, lineHunks } from './linediff';
import type { FileContent } from './file-content';
import type { FileWrite } from './types';

const READ_CONCURRENCY = 4;

/**
 * Turns the paths a command may have changed into line-level FileWrites by comparing each file's
 * content now with its content before. A path that does not exist before or after (a temp file
 * renamed away, a lock file) is no write; a directory is no write; identical content gives a write
 * with no hunks (the contract for overwrites with the same bytes).
 */
export async function resolveWrites(
  paths: readonly string[],
  after: (path: string) => Promise<FileContent>,
  before: (path: string) => Promise<FileContent>,
  maxFiles: number,
  remember?: (path: string, content: FileContent) => void,
): Promise<{ writes: FileWrite[]; notes: string[] }> {
  const unique = [...new Set(paths)];
  const notes: string[] = [];
  const todo = unique.slice(0, maxFiles);
  if (unique.length > maxFiles) notes.push(`${unique.length - maxFiles} written files beyond the cap of ${maxFiles} were not diffed: ${unique.slice(maxFiles, maxFiles + 5).join(', ')}…`);
  const results: (FileWrite | undefined)[] = new Array(todo.length);
  const notDiffed: string[] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < todo.length) {
      const i = next++;
      const path = todo[i];
      try {
        const [now, then] = await Promise.all([after(path), before(path)]);
        remember?.(path, now);
        results[i] = toWrite(path, then, now, notDiffed);
      } catch (err) {
        notDiffed.push(`${path} (${(err as Error).message.split('\n')[0]})`);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(READ_CONCURRENCY, todo.length) }, worker));
  if (notDiffed.length) notes.push(`not diffed: ${notDiffed.slice(0, 10).join(', ')}${notDiffed.length > 10 ? '…' : ''}`);
  return { writes: results.filter((w): w is FileWrite => w !== undefined), notes };
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
