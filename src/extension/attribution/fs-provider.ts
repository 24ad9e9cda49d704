import * as vscode from 'vscode';
import { readFile, readdir, stat } from 'node:fs/promises';
import { changedFileView, originalFilePath, readSnapshotIndex, snapshotFilePath, ORIGINALS_DIR, SNAPSHOT_INDEX } from '../../core/attribution/snapshot';
import { parseContainerUri, type ParsedContainerUri } from './uri';

/**
 * Files the agent changed, as they were when the run ended: read from the run's snapshot
 * (`<run>/files/`), since the container itself is gone; and with `side=original`, as the image
 * had them (`<run>/originals/`; empty for a file the agent created), the left side of the diff.
 * Read-only: editing a past run's output would make the attribution lie.
 */
export class ContainerFileSystem implements vscode.FileSystemProvider {
  private readonly emitter = new vscode.EventEmitter<vscode.FileChangeEvent[]>();
  readonly onDidChangeFile = this.emitter.event;

  watch(): vscode.Disposable {
    // Snapshots never change after the run.
    return new vscode.Disposable(() => {});
  }

  async stat(uri: vscode.Uri): Promise<vscode.FileStat> {
    if (this.createdByAgent(uri)) return { type: vscode.FileType.File, ctime: 0, mtime: 0, size: 0, permissions: vscode.FilePermission.Readonly };
    const s = await stat(this.local(uri)).catch(() => {
      throw this.notFound(uri);
    });
    return { type: s.isDirectory() ? vscode.FileType.Directory : vscode.FileType.File, ctime: s.ctimeMs, mtime: s.mtimeMs, size: s.size, permissions: vscode.FilePermission.Readonly };
  }

  async readDirectory(uri: vscode.Uri): Promise<[string, vscode.FileType][]> {
    const entries = await readdir(this.local(uri), { withFileTypes: true }).catch(() => {
      throw this.notFound(uri);
    });
    return entries.filter((e) => e.name !== SNAPSHOT_INDEX).map((e) => [e.name, e.isDirectory() ? vscode.FileType.Directory : vscode.FileType.File]);
  }

  async readFile(uri: vscode.Uri): Promise<Uint8Array> {
    if (this.createdByAgent(uri)) return new Uint8Array();
    return readFile(this.local(uri)).catch(() => {
      throw this.notFound(uri);
    });
  }

  createDirectory(uri: vscode.Uri): never {
    throw this.readOnly(uri);
  }

  writeFile(uri: vscode.Uri): never {
    throw this.readOnly(uri);
  }

  delete(uri: vscode.Uri): never {
    throw this.readOnly(uri);
  }

  rename(uri: vscode.Uri): never {
    throw this.readOnly(uri);
  }

  private local(uri: vscode.Uri): string {
    const parsed = this.parsed(uri);
    const local = (parsed.side === 'original' ? originalFilePath : snapshotFilePath)(parsed.runDir, parsed.path);
    if (!local) throw vscode.FileSystemError.FileNotFound(`${parsed.path} is not an absolute container path.`);
    return local;
  }

  private parsed(uri: vscode.Uri): ParsedContainerUri {
    const parsed = parseContainerUri(uri);
    if (!parsed) throw vscode.FileSystemError.FileNotFound(`${uri.toString()} is not a tbrl-container URI (tbrl-container:/<run id>/<path>?run=<run dir>[&side=original]).`);
    return parsed;
  }

  /** The original side of a file the image did not have: the diff is against nothing. */
  private createdByAgent(uri: vscode.Uri): boolean {
    const parsed = this.parsed(uri);
    if (parsed.side !== 'original') return false;
    const view = changedFileView(readSnapshotIndex(parsed.runDir), parsed.path);
    return view.kind === 'diff' && view.original === 'empty';
  }

  private notFound(uri: vscode.Uri): vscode.FileSystemError {
    const parsed = parseContainerUri(uri);
    if (parsed?.side === 'original') {
      return vscode.FileSystemError.FileNotFound(`The original of ${parsed.path} was not kept with run ${parsed.runDir} (${ORIGINALS_DIR}/; ${SNAPSHOT_INDEX} says why per file); runs made before originals were kept have none — run the task again for a diff.`);
    }
    return vscode.FileSystemError.FileNotFound(`${parsed?.path ?? uri.path} was not saved with run ${parsed?.runDir ?? '?'}: runs keep the files the agent changed in files/ (see ${SNAPSHOT_INDEX} for what was skipped); runs made before this existed have none — run the task again.`);
  }

  private readOnly(uri: vscode.Uri): vscode.FileSystemError {
    return vscode.FileSystemError.NoPermissions(`${uri.path} is the final state of a finished run and is read-only; edit the task or re-run the agent instead.`);
  }
}
