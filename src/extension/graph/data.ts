import { readTrajectory, type Trajectory } from '../../core/trajectory/reader';
import { TbrlError } from '../../core/errors';
import { depgpoOfTrajectory } from '../../core/depgpo/trajectory';
import { computeDepgpo } from '../../core/depgpo/compute';
import { buildGraphView, type GraphView } from '../../core/depgpo/view';
import type { RunInfo } from '../../../webview/trace-graph/protocol';

/** The trace graph of a trajectory file, as `tbrl graph --json` writes it. */
export async function graphOfTrajectory(path: string): Promise<GraphView> {
  return graphOf(await readTrajectory(path));
}

function graphOf(t: Trajectory): GraphView {
  const { input, result } = depgpoOfTrajectory(t);
  return buildGraphView(input, result, { runId: t.header.runId, taskId: t.header.task?.id });
}

/** A graph with no command, for a live run that has not written its trajectory yet. */
export function emptyGraph(): GraphView {
  const input = { commands: [], instruction: '', stepTokens: [] };
  return buildGraphView(input, computeDepgpo(input));
}

/** Codes readTrajectory throws while a live run's file is still being created (missing, or no header line yet). */
const NOT_WRITTEN_YET = new Set(['trajectory-read', 'trajectory-no-header']);

/**
 * The graph of a trajectory and how far its run has got. A live run's trajectory may not exist yet
 * (the sandbox is still starting, a fork is being set up): that is a state to show, not an error.
 * For a finished run the reader's error (bad path, damaged file) is passed on as it is.
 */
export async function graphWithRun(path: string, live: boolean): Promise<{ graph: GraphView; run: RunInfo }> {
  let t: Trajectory;
  try {
    t = await readTrajectory(path);
  } catch (err) {
    if (!live || !(err instanceof TbrlError) || !NOT_WRITTEN_YET.has(err.code)) throw err;
    return { graph: emptyGraph(), run: { live, steps: 0, ended: false, eKnown: false, waiting: 'The live run has not written its trajectory yet (its sandbox is starting); the graph appears with its first step.' } };
  }
  return {
    graph: graphOf(t),
    run: { live: live && !t.footer, steps: t.steps.length, ended: t.footer !== undefined, eKnown: t.footer?.verifierTrace !== undefined },
  };
}
