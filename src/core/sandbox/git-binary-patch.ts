import { createHash } from 'node:crypto';
import { deflateSync, inflateSync } from 'node:zlib';

/**
 * Git's binary patch format (`git diff --binary`): `git apply` refuses a binary change without a
 * full index line and the content, so a workspace patch carries both, as git writes them.
 */

const EN85 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~';
const DE85 = new Map([...EN85].map((c, i) => [c, i]));
export const NULL_OID = '0'.repeat(40);

/** The object id git gives a file's content (sha1 of "blob <size>\0<content>"). */
export function gitBlobId(content: Buffer): string {
  return createHash('sha1').update(`blob ${content.length}\0`).update(content).digest('hex');
}

function encode85Line(chunk: Buffer): string {
  const len = chunk.length;
  let line = len <= 26 ? String.fromCharCode(65 + len - 1) : String.fromCharCode(97 + len - 27);
  for (let i = 0; i < len; i += 4) {
    let acc = 0;
    for (let j = 0; j < 4; j++) acc = acc * 256 + (i + j < len ? chunk[i + j] : 0);
    const group: string[] = [];
    for (let k = 0; k < 5; k++) {
      group.unshift(EN85[acc % 85]);
      acc = Math.floor(acc / 85);
    }
    line += group.join('');
  }
  return line;
}

/** One `literal` hunk: the whole content, deflated, 52 bytes per base85 line, then a blank line. */
function literalHunk(content: Buffer): string {
  const z = deflateSync(content);
  const lines = [`literal ${content.length}`];
  for (let i = 0; i < z.length; i += 52) lines.push(encode85Line(z.subarray(i, i + 52)));
  return lines.join('\n') + '\n\n';
}

/** The lines after the `diff --git` and mode lines: index, then forward and reverse literals. */
export function binaryPatchBody(before: Buffer | undefined, after: Buffer | undefined): string {
  const oldId = before ? gitBlobId(before) : NULL_OID;
  const newId = after ? gitBlobId(after) : NULL_OID;
  const mode = before && after ? ' 100644' : '';
  return `index ${oldId}..${newId}${mode}\nGIT binary patch\n${literalHunk(after ?? Buffer.alloc(0))}${literalHunk(before ?? Buffer.alloc(0))}`;
}

export interface BinaryPatch {
  oldId: string;
  newId: string;
  /** The new content (an empty buffer for a deletion). */
  content: Buffer;
}

/** Reads a binary section's index line and forward `literal` hunk; undefined when it has none (e.g. "Binary files … differ"). */
export function parseBinaryPatch(body: string): BinaryPatch | undefined {
  const index = /^index ([0-9a-f]{40})\.\.([0-9a-f]{40})/m.exec(body);
  const start = body.indexOf('GIT binary patch\n');
  if (!index || start < 0) return undefined;
  const lines = body.slice(start + 'GIT binary patch\n'.length).split('\n');
  const head = /^(literal|delta) (\d+)$/.exec(lines[0] ?? '');
  if (!head) throw new Error('the binary patch has no literal hunk');
  // Only literals are written by workspacePatch; a delta needs the base object and is refused.
  if (head[1] === 'delta') throw new Error('the binary patch is a delta (made by git, not by tbrl); apply it with `git apply`');
  const size = Number(head[2]);
  const chunks: Buffer[] = [];
  for (const line of lines.slice(1)) {
    if (!line) break;
    const c = line.charCodeAt(0);
    const len = c >= 65 && c <= 90 ? c - 64 : c >= 97 && c <= 122 ? c - 96 + 26 : -1;
    if (len < 0 || (line.length - 1) % 5 !== 0) throw new Error(`malformed binary patch line "${line.slice(0, 20)}"`);
    const bytes: number[] = [];
    for (let i = 1; i < line.length; i += 5) {
      let acc = 0;
      for (let k = 0; k < 5; k++) {
        const d = DE85.get(line[i + k]);
        if (d === undefined) throw new Error(`malformed binary patch line "${line.slice(0, 20)}"`);
        acc = acc * 85 + d;
      }
      bytes.push(Math.floor(acc / 2 ** 24) & 255, (acc >>> 16) & 255, (acc >>> 8) & 255, acc & 255);
    }
    chunks.push(Buffer.from(bytes.slice(0, len)));
  }
  const content = inflateSync(Buffer.concat(chunks));
  if (content.length !== size) throw new Error(`the binary patch says ${size} bytes but holds ${content.length}`);
  return { oldId: index[1], newId: index[2], content };
}
