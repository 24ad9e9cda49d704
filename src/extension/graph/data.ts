import { readTrajectory } from '../../core/trajectory/reader';
import { depgpoOfTrajectory } from '../../core/depgpo/trajectory';
import { buildGraphView, type GraphView } from '../../core/depgpo/view';

/** The trace graph of a trajectory file, as `tbrl graph --json` writes it. */
export async function graphOfTrajectory(path: string): Promise<GraphView> {
  const t = await readTrajectory(path);
  const { input, result } = depgpoOfTrajectory(t);
  return buildGraphView(input, result, { runId: t.header.runId, taskId: t.header.task?.id });
}
