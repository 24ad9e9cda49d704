import { readFile } from 'node:fs/promises';
import { checkFooterShape, checkHeaderShape, checkStepShape } from './shape';
import { TbrlError, errorMessage } from '../errors';
import { TRAJECTORY_MAJOR, TRAJECTORY_SCHEMA } from './schema';
import type { StepRecord, TrajectoryFooter, TrajectoryHeader } from './schema';

export interface Trajectory {
  path: string;
  header: TrajectoryHeader;
  steps: StepRecord[];
  /** Missing when the run was killed or is still running. */
  footer?: TrajectoryFooter;
  /** The last line was cut short (a kill mid-write); it was dropped. */
  truncated: boolean;
  warnings: string[];
}

const SCHEMA_RE = /^tbrl\.trajectory\/(\d+)\.(\d+)$/;

export async function readTrajectory(path: string): Promise<Trajectory> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new TbrlError('trajectory-read', `Cannot read the trajectory ${path}: ${errorMessage(err)}`, 'Pass the path of a trajectory.jsonl written by `tbrl run` (runs/<task>-<time>/trajectory.jsonl).', { cause: err });
  }
  return parseTrajectory(text, path);
}

/** Parses trajectory.jsonl text; `source` names the file in errors and warnings. */
export function parseTrajectory(text: string, source: string): Trajectory {
  const lines = text.split('\n');
  // A file written by our writer always ends with '\n', so the final element is '' unless the last write was cut.
  const endsCleanly = lines[lines.length - 1] === '';
  if (endsCleanly) lines.pop();
  const warnings: string[] = [];
  let truncated = false;

  const records: unknown[] = [];
  const lineOf: number[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (line.trim() === '') continue;
    const isLast = i === lines.length - 1;
    try {
      records.push(JSON.parse(line));
      lineOf.push(i + 1);
    } catch (err) {
      if (isLast) {
        truncated = true;
        warnings.push(`${source}: line ${i + 1} is incomplete (${line.length} bytes, the run was probably killed while writing it); it was ignored.`);
        break;
      }
      throw new TbrlError('trajectory-corrupt', `${source}: line ${i + 1} is not valid JSON (${errorMessage(err)}).`, 'Only the last line of a trajectory may be incomplete; the file was edited or damaged. Re-run the task or remove the damaged line.');
    }
    if (isLast && !endsCleanly) {
      // The JSON parsed but the newline never made it: the footer or step is whole, say so but keep it.
      warnings.push(`${source}: the last line has no trailing newline; it parsed and was kept.`);
    }
  }

  const header = records[0] as Partial<TrajectoryHeader> | undefined;
  if (!header || header.type !== 'header') {
    throw new TbrlError('trajectory-no-header', `${source}: the first line is not a trajectory header${records.length === 0 ? ' (the file is empty)' : ''}.`, 'Pass a trajectory.jsonl written by `tbrl run`; its first line is {"type":"header","schema":"tbrl.trajectory/1.x",...}.');
  }
  checkSchema(String(header.schema), source);
  checkHeaderShape(header as Record<string, unknown>, source, lineOf[0]);

  const steps: StepRecord[] = [];
  let footer: TrajectoryFooter | undefined;
  for (let i = 1; i < records.length; i++) {
    const rec = records[i] as { type?: string };
    if (rec === null || typeof rec !== 'object' || Array.isArray(rec)) {
      throw new TbrlError('trajectory-shape', `${source}: line ${lineOf[i]} is ${rec === null ? 'null' : Array.isArray(rec) ? 'an array' : typeof rec}, not a trajectory record.`, 'Each line of a trajectory.jsonl is one JSON object with a "type" of step or footer.');
    }
    if (footer) {
      warnings.push(`${source}: a ${rec.type ?? 'record'} follows the footer; it was ignored.`);
      continue;
    }
    if (rec?.type === 'step') {
      checkStepShape(rec as Record<string, unknown>, source, lineOf[i]);
      const step = rec as StepRecord;
      if (step.index !== steps.length) warnings.push(`${source}: step ${step.index} is out of order (expected ${steps.length}).`);
      steps.push(step);
    } else if (rec?.type === 'footer') {
      checkFooterShape(rec as Record<string, unknown>, source, lineOf[i]);
      footer = rec as TrajectoryFooter;
    } else {
      warnings.push(`${source}: record ${i + 1} has unknown type ${JSON.stringify(rec?.type)}; it was ignored.`);
    }
  }
  if (!footer) warnings.push(`${source}: no footer — the run was interrupted (or is still running) after ${steps.length} step(s); it has no reward.`);
  else if (footer.steps !== steps.length) warnings.push(`${source}: the footer counts ${footer.steps} step(s) but ${steps.length} are recorded.`);

  return { path: source, header: header as TrajectoryHeader, steps, footer, truncated, warnings };
}

function checkSchema(schema: string, source: string): void {
  const m = SCHEMA_RE.exec(schema);
  if (!m) {
    throw new TbrlError('trajectory-schema', `${source}: unrecognised schema ${JSON.stringify(schema)} (this tbrl reads ${TRAJECTORY_SCHEMA}).`, 'Pass a trajectory written by `tbrl run`.');
  }
  const major = Number(m[1]);
  if (major !== TRAJECTORY_MAJOR) {
    throw new TbrlError(
      'trajectory-version',
      `${source}: schema version ${m[1]}.${m[2]} is not supported: this tbrl reads major version ${TRAJECTORY_MAJOR} (${TRAJECTORY_SCHEMA}).`,
      major > TRAJECTORY_MAJOR ? 'Upgrade tbrl to read trajectories from a newer version.' : 'Convert the trajectory with the tbrl version that wrote it, or re-run the task.',
    );
  }
}
