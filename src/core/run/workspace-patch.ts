import { existsSync, mkdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, isAbsolute, posix, relative, resolve, sep } from 'node:path';
import { applyPatch } from 'diff';
import { TbrlError, errorMessage } from '../errors';
import { gitBlobId, parseBinaryPatch, type BinaryPatch } from '../sandbox/git-binary-patch';

/** One file's part of a workspace patch (the git-style unified diff `workspacePatch` writes). */
export interface FilePatch {
  path: string;
  /** 'binary': a binary change without its content ("Binary files … differ"), which cannot be applied. */
  kind: 'add' | 'delete' | 'modify' | 'binary';
  /** The ---/+++ and hunk lines, as `diff`'s applyPatch reads them. */
  body: string;
  /** A full-index binary patch (`GIT binary patch`): the old and new object ids and the new content. */
  binary?: BinaryPatch;
}

/** What applying a patch would do to one file: `after` null means the file is deleted; binary files are Buffers. */
export interface FileChange {
  path: string;
  kind: FilePatch['kind'];
  before: string | Buffer | undefined;
  after: string | Buffer | null;
}

/** A side of a change as the diff view shows it: binary content is named by size and object id. */
export function changeText(content: string | Buffer | null | undefined): string {
  if (content === null || content === undefined) return '';
  return typeof content === 'string' ? content : `(binary file, ${content.length} bytes, git object ${gitBlobId(content).slice(0, 12)})\n`;
}

/** A patch names files relative to the workspace; anything that could escape it is refused. */
function checkedPath(raw: string): string {
  const p = posix.normalize(raw);
  if (!p || p === '.' || isAbsolute(raw) || p.startsWith('../') || p === '..' || p.includes('\0')) {
    throw new TbrlError('PATCH_PATH_OUTSIDE', `The patch names "${raw}", which is not a path inside the workspace.`, 'Only patches made by `tbrl run-workspace` (changes.patch) can be applied; do not edit their file names.');
  }
  return p;
}

export function parseWorkspacePatch(text: string): FilePatch[] {
  if (!text.trim()) return [];
  const sections = text.split(/^(?=diff --git )/m).filter((s) => s.trim());
  return sections.map((section) => {
    const m = /^diff --git a\/(.+?) b\/(.+)$/m.exec(section);
    if (!m || section.indexOf(m[0]) !== 0) {
      throw new TbrlError('PATCH_INVALID', `Not a git-style patch section: "${section.split('\n')[0].slice(0, 80)}".`, 'Use the changes.patch a workspace run wrote (each file starts with "diff --git a/<path> b/<path>").');
    }
    const path = checkedPath(m[2]);
    const rest = section.slice(m[0].length + 1);
    const gitBinary = /^GIT binary patch$/m.test(rest);
    const kind: FilePatch['kind'] = !gitBinary && /^Binary files /m.test(rest) ? 'binary' : /^new file mode/m.test(rest) ? 'add' : /^deleted file mode/m.test(rest) ? 'delete' : 'modify';
    const body = rest.replace(/^(new|deleted) file mode \d+\n/, '');
    if (!gitBinary) return { path, kind, body };
    let binary: BinaryPatch | undefined;
    try {
      binary = parseBinaryPatch(rest);
    } catch (err) {
      throw new TbrlError('PATCH_INVALID', `The binary change to ${path} cannot be read: ${errorMessage(err)}.`, 'Use the changes.patch a workspace run wrote, unedited.');
    }
    if (!binary) throw new TbrlError('PATCH_INVALID', `The binary change to ${path} has no full index line.`, 'Use the changes.patch a workspace run wrote, unedited.');
    return { path, kind, body, binary };
  });
}

/**
 * The new content of every file the patch touches, from `read` (current content, undefined when
 * absent). Pure: nothing is written, so a patch that does not fit is refused as a whole.
 */
export function planWorkspacePatch(patch: FilePatch[], read: (path: string) => string | Buffer | undefined): FileChange[] {
  return patch.map((fp) => {
    const current = read(fp.path);
    if (fp.kind === 'binary') {
      throw new TbrlError('PATCH_BINARY', `${fp.path} is a binary file; the patch only says that it changed.`, 'Copy that file out of the run by hand, or leave it out of the change.');
    }
    if (fp.kind === 'add' && current !== undefined) {
      throw new TbrlError('PATCH_CONFLICT', `${fp.path} already exists, but the patch creates it.`, 'The workspace changed since the run (or the change was already applied): re-run the agent on the current workspace.');
    }
    if (fp.kind !== 'add' && current === undefined) {
      throw new TbrlError('PATCH_CONFLICT', `${fp.path} does not exist, but the patch ${fp.kind === 'delete' ? 'deletes' : 'changes'} it.`, 'The workspace changed since the run: re-run the agent on the current workspace.');
    }
    if (fp.binary) {
      const before = current === undefined ? undefined : Buffer.from(current);
      if (before && gitBlobId(before) !== fp.binary.oldId) {
        throw new TbrlError('PATCH_CONFLICT', `${fp.path} is not the file the run started from (its content changed since).`, 'The workspace changed since the run (or the change was already applied): re-run the agent on the current workspace.');
      }
      if (fp.kind !== 'delete' && gitBlobId(fp.binary.content) !== fp.binary.newId) {
        throw new TbrlError('PATCH_INVALID', `The binary change to ${fp.path} does not hold the content its index line names.`, 'Use the changes.patch a workspace run wrote, unedited.');
      }
      return { path: fp.path, kind: fp.kind, before, after: fp.kind === 'delete' ? null : fp.binary.content };
    }
    const before = current === undefined ? undefined : current.toString('utf8');
    const after = applyPatch(before ?? '', fp.body);
    if (after === false) {
      throw new TbrlError('PATCH_CONFLICT', `The change to ${fp.path} does not fit its current content.`, 'The file changed since the run (or the change was already applied): re-run the agent on the current workspace.');
    }
    return { path: fp.path, kind: fp.kind, before, after: fp.kind === 'delete' ? null : after };
  });
}

/** Reads the current content of the patched files under `root` (the host workspace or a copy). */
export function planPatchOnFolder(root: string, patchText: string): FileChange[] {
  return planWorkspacePatch(parseWorkspacePatch(patchText), (p) => {
    const abs = insideRoot(root, p);
    return existsSync(abs) ? readFileSync(abs) : undefined;
  });
}

/** A path under root, also after symlinks: a link inside the workspace must not lead a write outside it. */
function insideRoot(root: string, rel: string): string {
  const realRoot = realpathSync(root);
  const abs = resolve(realRoot, rel);
  let probe = abs;
  while (!existsSync(probe)) probe = dirname(probe);
  const real = realpathSync(probe);
  const back = relative(realRoot, real);
  if (back.startsWith('..') || isAbsolute(back) || back.split(sep).includes('..')) {
    throw new TbrlError('PATCH_PATH_OUTSIDE', `${rel} resolves to ${real}, outside the workspace ${realRoot}.`, 'Remove the symbolic link that points outside the workspace, or apply the change by hand.');
  }
  return abs;
}

/**
 * Writes a plan made by planPatchOnFolder, exactly as planned (what the diff view showed): every
 * path is checked again against the root, and a file that changed since the plan refuses the whole write.
 */
export function writeChanges(root: string, changes: FileChange[]): void {
  const targets = changes.map((c) => ({ c, abs: insideRoot(root, c.path) }));
  for (const { c, abs } of targets) {
    const now = existsSync(abs) ? readFileSync(abs) : undefined;
    const planned = c.before === undefined ? undefined : Buffer.from(c.before);
    if (now === undefined ? planned !== undefined : planned === undefined || !now.equals(planned)) {
      throw new TbrlError('PATCH_CONFLICT', `${c.path} changed after the changes were planned (shown), so they were not applied.`, 'Look at the agent\'s changes again (they are planned against the workspace as it is now), then apply.');
    }
  }
  for (const { c, abs } of targets) {
    if (c.after === null) rmSync(abs, { force: true });
    else {
      mkdirSync(dirname(abs), { recursive: true });
      writeFileSync(abs, c.after);
    }
  }
}
