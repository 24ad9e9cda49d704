import { errorMessage } from '../../errors';
import { snapshotChangedFiles, ORIGINALS_DIR, SNAPSHOT_DIR } from '../../attribution/snapshot';
import { unknownOriginals, type OriginalSource } from '../../attribution/originals';
import { aborted, type RunContext, type RunPhase } from '../context';

/**
 * Phase 6, snapshot: the container goes away when the run ends, so the final content of what the
 * agent changed (and, where it can be read, what those files held before) is kept for the editor,
 * then the caller's `beforeClose` takes its last look. Skipped when the run was aborted.
 */
export const snapshotPhase: RunPhase = {
  name: 'snapshot',
  async run(ctx: RunContext): Promise<void> {
    if (!ctx.loop || aborted(ctx)) return;
    const sandbox = ctx.sandbox!;
    const originals = originalsOf(ctx);
    try {
      const snapshot = await snapshotChangedFiles(sandbox, ctx.steps, ctx.outDir, { originals });
      const missed = snapshot.skipped.filter((s) => !s.reason.startsWith('deleted'));
      if (missed.length > 0) ctx.warn(`Changed files left out of ${SNAPSHOT_DIR}/: ${missed.map((s) => `${s.path} (${s.reason})`).join('; ')}`);
      const noOriginal = snapshot.files.flatMap((f) => (f.original?.status === 'skipped' ? [`${f.path} (${f.original.reason})`] : []));
      if (noOriginal.length > 0) ctx.warn(`Originals left out of ${ORIGINALS_DIR}/ (those files open without a diff): ${noOriginal.join('; ')}`);
    } catch (err) {
      ctx.warn(`The changed files could not be saved: ${errorMessage(err)}`);
    } finally {
      await originals.close();
    }
    if (ctx.options.beforeClose) {
      try {
        await ctx.options.beforeClose(sandbox, ctx.outDir);
      } catch (err) {
        ctx.warn(`Collecting the final state failed: ${errorMessage(err)}`);
      }
    }
  },
};

/** Where the run's changed files' originals are read from: the root image (and the host folder of a copied-in workspace), through the sandbox. */
function originalsOf(ctx: RunContext): OriginalSource {
  const image = ctx.header.sandbox?.originalImage;
  if (!image) return unknownOriginals(`the image the run started from is not known (the run it was forked from, ${ctx.header.forkedFrom?.trajectory ?? 'unknown'}, has no readable header chain back to its root)`);
  return ctx.sandbox!.originals(image, ctx.runId);
}
