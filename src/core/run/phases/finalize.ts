import { writeFileSync } from 'node:fs';
import { TbrlError, errorMessage } from '../../errors';
import { TrajectoryWriter } from '../../trajectory/writer';
import type { TrajectoryFooter } from '../../trajectory/schema';
import { renderReport } from '../report';
import { classifyOutcome } from '../classify-outcome';
import type { RunContext, RunOutcome, RunTaskResult } from '../context';

const SANDBOX_LOST_CODES = new Set(['DOCKER_DIED', 'CONTAINER_GONE']);

/** Closes the sandbox and stops `tbrl serve`, whatever happened before; their failures are warnings. */
export async function release(ctx: RunContext): Promise<void> {
  const sandbox = ctx.sandbox;
  if (sandbox && ctx.options.deferClose) await ctx.options.deferClose(() => sandbox.close());
  else if (sandbox) await sandbox.close().catch((err) => ctx.warn(`Closing the sandbox failed: ${errorMessage(err)}`));
  await ctx.localServer?.stop().catch((err) => ctx.warn(`Stopping tbrl serve failed: ${errorMessage(err)}`));
}

/** The footer of a run from what the phases left in the context (pure: no I/O). */
export function footerOf(ctx: RunContext, endedAt = new Date()): TrajectoryFooter {
  const { failure, loop, steps, reward } = ctx;
  const signal = ctx.options.signal;
  // Losing the Docker daemon or the container is an interruption of the run, not a fault of the
  // agent: the steps so far are kept and the run can be forked from its last checkpoint.
  const lostSandbox = failure instanceof TbrlError && SANDBOX_LOST_CODES.has(failure.code);
  const endReason: TrajectoryFooter['endReason'] = failure
    ? signal?.aborted ? (signal.reason === 'interrupted' ? 'interrupted' : 'cancelled') : lostSandbox ? 'interrupted' : 'error'
    : loop!.endReason;
  const footer: TrajectoryFooter = {
    type: 'footer',
    endedAt: endedAt.toISOString(),
    endReason,
    ...(failure ? { endMessage: errorMessage(failure) } : loop?.endMessage ? { endMessage: loop.endMessage } : {}),
    steps: steps.length,
    ...(reward ? { reward } : {}),
    ...(ctx.verifierTrace ? { verifierTrace: ctx.verifierTrace } : {}),
    ...(ctx.depgpo ? { depgpo: ctx.depgpo } : {}),
    usage: {
      promptTokens: steps.reduce((a, s) => a + s.usage.promptTokens, 0),
      completionTokens: steps.reduce((a, s) => a + s.usage.completionTokens, 0),
      verifierCalls: steps.reduce((a, s) => a + (s.decision?.calls ?? 0), 0),
      verifierOutputTokens: steps.reduce((a, s) => a + (s.decision?.outputTokens ?? 0), 0),
    },
  };
  footer.outcome = classifyOutcome({ failure, endReason, endMessage: footer.endMessage, reward, skipReward: ctx.options.skipReward, substitutedFrom: ctx.header.sandbox?.substitutedFrom });
  return footer;
}

/**
 * Phase 7, finalize: runs on every path. Releases the sandbox and the local server, ends the
 * trajectory with its footer (creating the file first when the run failed before it existed),
 * writes report.md, and returns the result with the error, if any, beside it.
 */
export async function finalize(ctx: RunContext): Promise<RunOutcome> {
  ctx.phase = 'finalize';
  await release(ctx);
  const footer = footerOf(ctx);
  // A failure before the sandbox existed still leaves a trajectory that says what happened.
  if (!ctx.writer) {
    try {
      ctx.writer = TrajectoryWriter.create(ctx.trajectoryPath, ctx.header);
    } catch (err) {
      if (!ctx.failure) ctx.failure = err;
    }
  }
  if (ctx.writer && !ctx.writer.closed) ctx.writer.writeFooter(footer);

  ctx.progress({ type: 'phase', message: `Writing ${ctx.reportPath}` });
  const { runId, outDir, trajectoryPath, reportPath, header, steps, warnings } = ctx;
  const policyDescription = ctx.policy.description;
  const result: RunTaskResult = { runId, outDir, trajectoryPath, reportPath, header, steps, footer, policyDescription, warnings };
  if (ctx.writer) writeFileSync(reportPath, renderReport({ header, steps, footer, policyDescription, trajectoryPath, warnings }));
  if (!ctx.failure) return { result };
  const failure = ctx.failure;
  const error = failure instanceof TbrlError ? failure : new TbrlError('run-failed', `The run failed: ${errorMessage(failure)}`, `See ${trajectoryPath} for the steps that completed.`, { cause: failure });
  return { result, error };
}
