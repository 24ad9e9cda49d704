import type { WritableFormat, WriteResult } from './write';
import { writeTask } from './write';
import { loadTask } from './load';

/** Load a task in either format and write it in `format` to `outDir`, with what could not be carried. */
export async function convertTask(srcDir: string, outDir: string, format: WritableFormat): Promise<WriteResult> {
  return writeTask(await loadTask(srcDir), outDir, format);
}
