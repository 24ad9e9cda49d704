import { createHash } from 'node:crypto';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join, relative, resolve, sep } from 'node:path';
import { TbrlError } from '../errors';
import { loadTask } from '../tasks/load';
import type { Task } from '../tasks/model';
import { readTrajectory } from '../trajectory/reader';
import type { Trajectory } from '../trajectory/reader';
import { creditForGroup } from '../depgpo/credit';
import { isMasked, outcomeOf, type OutcomeClass } from '../run/outcome';
import type { AdvantageExport } from '../depgpo/credit';
import { initialMessages, loadSystemPrompt } from '../agent/prompt';
import { packageRoot } from '../sandbox/package-root';
import { VERSION } from '../version';
import { buildZip } from './zip';
import { getPreset } from './presets';
import { algorithmNames, estimatorFor, isAlgorithm, type Algorithm } from './estimators';
import type { ZipEntry } from './zip';
import { isSecretName, refuseSecrets, scanText, secretNamedKeys } from './secrets';
import type { SecretFinding } from './secrets';

export type { Algorithm } from './estimators';
export const BUNDLE_SCHEMA = 'tbrl.bundle/1';
/** What the dataset rows say they come from (verl routes rewards by data_source). */
export const DATA_SOURCE = 'tbrl';

export interface BundleOptions {
  preset: string;
  algorithm: Algorithm;
  taskDirs: string[];
  /** trajectory.jsonl files or run directories holding one. */
  trajectories: string[];
  /** Hydra overrides passed to verl/rLLM, `key=value`. */
  overrides?: string[];
  /** Non-secret environment variables for the job. */
  env?: Record<string, string>;
  /** Values that must not appear anywhere in the bundle (tokens, keys from the local environment). */
  secrets?: string[];
  /** trainer-bridge/ (default: next to package.json). */
  bridgeDir?: string;
  /** Refuse bundles larger than this (default just under the dashboard's 100 MiB request limit). */
  maxBytes?: number;
}

export interface Manifest {
  schema: typeof BUNDLE_SCHEMA;
  preset: string;
  algorithm: Algorithm;
  versions: { tbrl: string; node: string; promptVersion: string; bridge: string };
  dataset: { format: 'jsonl'; rows: number; note: string };
  tasks: Array<{ id: string; format: string; dir: string }>;
  trajectories: Array<{ file: string; runId: string; taskId: string; steps: number; reward?: number; outcome?: OutcomeClass; masked?: true }>;
  overrides: string[];
  /** sha256 of every other file in the bundle. */
  files: Record<string, string>;
}

export interface Bundle {
  zip: Buffer;
  /** sha256 of the zip: same inputs, same hash, same package. */
  sha256: string;
  packageUri: string;
  manifest: Manifest;
  advantages: AdvantageExport;
}

const SKIP_DIRS = new Set(['.git', 'node_modules', '__pycache__', 'runs', '.venv', '.tbrl']);
// Ray's dashboard refuses request bodies over 100 MiB (DASHBOARD_CLIENT_MAX_SIZE), so a bigger PUT could never land.
export const DEFAULT_MAX_BUNDLE_BYTES = 95 * 1024 * 1024;
const OVERRIDE_RE = /^[+~]{0,2}[A-Za-z_][\w.\-/@]*=.*$/s;

export function packageUriFor(sha256: string): string {
  return `gcs://_ray_pkg_${sha256.slice(0, 32)}.zip`;
}

export function validateOverrides(overrides: string[]): void {
  for (const o of overrides) {
    if (!OVERRIDE_RE.test(o)) {
      throw new TbrlError('bundle-override', `"${o}" is not a Hydra override.`, 'Write key=value, e.g. --override actor_rollout_ref.actor.optim.lr=5e-7 (a leading + adds a key).');
    }
  }
}

export async function buildBundle(options: BundleOptions): Promise<Bundle> {
  // The package's own algorithms.json: its estimators are the TypeScript ones compiled in here.
  if (!isAlgorithm(options.algorithm)) {
    throw new TbrlError('bundle-algorithm', `Unknown algorithm "${String(options.algorithm)}".`, `Use ${algorithmNames().map((a) => `--algorithm ${a}`).join(' or ')}.`);
  }
  const overrides = options.overrides ?? [];
  validateOverrides(overrides);
  const secrets = options.secrets ?? [];
  const findings: SecretFinding[] = [];
  for (const o of overrides) {
    const key = o.slice(0, o.indexOf('='));
    if (isSecretName(key.split('.').pop() ?? key)) findings.push({ where: `override ${key}`, reason: 'has a secret-looking name' });
    findings.push(...scanText(`override ${key}`, o, secrets));
  }
  findings.push(...secretNamedKeys('job env', options.env ?? {}));
  for (const [k, v] of Object.entries(options.env ?? {})) findings.push(...scanText(`job env ${k}`, v, secrets));
  refuseSecrets(findings);

  const entries: ZipEntry[] = [];
  const bridgeDir = resolve(options.bridgeDir ?? join(packageRoot(), 'trainer-bridge'));
  const bridgeFiles = await walk(join(bridgeDir, 'tbrl_bridge'));
  if (bridgeFiles.length === 0) {
    throw new TbrlError('bundle-bridge-missing', `No trainer-bridge package at ${join(bridgeDir, 'tbrl_bridge')}.`, 'Run from a TBRL Studio checkout or installation (it ships trainer-bridge/tbrl_bridge).');
  }
  for (const f of bridgeFiles) if (f.endsWith('.py') || f.endsWith('.json')) entries.push({ path: `tbrl_bridge/${toPosix(relative(join(bridgeDir, 'tbrl_bridge'), f))}`, data: await readFile(f) });
  const bridgeVersion = await readBridgeVersion(bridgeDir);

  // Tasks: their directories travel whole (the env-server builds the image from them), and each
  // becomes a dataset row whose extra_info carries the full task with paths inside the bundle.
  // A preset with built-in tasks (cpu-tiny's echo-word family) may be submitted with neither.
  if (options.taskDirs.length === 0 && options.trajectories.length === 0 && getPreset(options.preset, options.bridgeDir).builtinTasks !== true) {
    throw new TbrlError('bundle-empty', 'Nothing to train on: no tasks and no trajectories.', 'Pass --tasks <dir>... (task directories) and/or --trajectories <run-dir|trajectory.jsonl>...');
  }
  const prompt = loadSystemPrompt();
  const tasks: Task[] = [];
  const taskIds = new Set<string>();
  for (const dir of options.taskDirs) {
    const task = await loadTask(dir);
    if (taskIds.has(task.id)) throw new TbrlError('bundle-duplicate-task', `Two task directories have the id "${task.id}" (${dir}).`, 'Pass each task once; rename one of them if they differ.');
    taskIds.add(task.id);
    tasks.push(task);
    for (const f of await walk(task.dir)) entries.push({ path: `tasks/${task.id}/${toPosix(relative(task.dir, f))}`, data: await readFile(f) });
  }
  const rows = tasks.map((task, index) => datasetRow(task, index, prompt.text));
  entries.push({ path: 'data/train.jsonl', data: Buffer.from(rows.map((r) => JSON.stringify(r)).join('\n') + (rows.length ? '\n' : ''), 'utf8') });

  // Trajectories and their per-step advantages, as the chosen estimator assigns them (estimators/).
  const trajectories: Trajectory[] = [];
  for (const p of options.trajectories) {
    const file = p.endsWith('.jsonl') ? p : join(p, 'trajectory.jsonl');
    trajectories.push(await readTrajectory(file));
  }
  const credit = creditForGroup(trajectories, { groupBy: 'task' });
  const advantages = estimatorFor(options.algorithm).advantages(credit);
  const manifestTrajectories: Manifest['trajectories'] = [];
  trajectories.forEach((t, i) => {
    const file = `trajectories/${String(i).padStart(3, '0')}-${safe(t.header.runId)}.jsonl`;
    const raw = [t.header, ...t.steps, ...(t.footer ? [t.footer] : [])].map((r) => JSON.stringify(r)).join('\n') + '\n';
    entries.push({ path: file, data: Buffer.from(raw, 'utf8') });
    // A masked outcome (verifier crash, lost container…) ships without a reward: it is not the agent's.
    const outcome = t.footer ? outcomeOf(t.footer) : undefined;
    const masked = !outcome || isMasked(outcome);
    const reward = masked ? undefined : t.footer?.reward?.total;
    manifestTrajectories.push({ file, runId: t.header.runId, taskId: t.header.task?.id ?? '', steps: t.steps.length, ...(typeof reward === 'number' ? { reward } : {}), ...(outcome ? { outcome: outcome.class } : {}), ...(masked ? { masked: true } : {}) });
  });
  // Paths in the export point at the user's disk; inside the bundle they point at the copies.
  const byPath = new Map(trajectories.map((t, i) => [t.path, manifestTrajectories[i].file]));
  for (const t of advantages.trajectories) t.path = byPath.get(t.path) ?? t.path;
  for (const s of advantages.skipped) s.path = byPath.get(s.path) ?? s.path;
  entries.push({ path: 'advantages.json', data: Buffer.from(JSON.stringify(advantages, null, 1) + '\n', 'utf8') });
  entries.push({ path: 'overrides.json', data: Buffer.from(JSON.stringify({ preset: options.preset, algorithm: options.algorithm, overrides }, null, 1) + '\n', 'utf8') });

  // Anything user-supplied could hold a secret by accident (an agent that printed its env).
  for (const e of entries) if (!e.path.startsWith('tbrl_bridge/')) findings.push(...scanText(e.path, e.data.toString('utf8'), secrets));
  refuseSecrets(findings);

  const files: Record<string, string> = {};
  for (const e of [...entries].sort((a, b) => (a.path < b.path ? -1 : 1))) files[e.path] = sha256(e.data);
  const manifest: Manifest = {
    schema: BUNDLE_SCHEMA,
    preset: options.preset,
    algorithm: options.algorithm,
    // Node's version stays out: the same inputs from two machines must give the same package.
    versions: { tbrl: VERSION, node: '>=20', promptVersion: prompt.version, bridge: bridgeVersion },
    dataset: { format: 'jsonl', rows: rows.length, note: 'data/train.jsonl is converted to data/train.parquet on the cluster (pyarrow), since writing parquet from TypeScript would need a native dependency.' },
    tasks: tasks.map((t) => ({ id: t.id, format: t.format, dir: `tasks/${t.id}` })),
    trajectories: manifestTrajectories,
    overrides,
    files,
  };
  entries.push({ path: 'manifest.json', data: Buffer.from(JSON.stringify(manifest, null, 1) + '\n', 'utf8') });

  const zip = buildZip(entries);
  const max = options.maxBytes ?? DEFAULT_MAX_BUNDLE_BYTES;
  if (zip.length > max) {
    throw new TbrlError('bundle-too-large', `The bundle is ${(zip.length / 1048576).toFixed(1)} MiB, over the ${(max / 1048576).toFixed(0)} MiB limit (Ray's dashboard accepts at most 100 MiB per upload).`, 'Leave large data out of the task directories (download or generate it in the Dockerfile), or split the tasks and trajectories over several jobs.');
  }
  const hash = sha256(zip);
  return { zip, sha256: hash, packageUri: packageUriFor(hash), manifest, advantages };
}

/** One verl/rLLM dataset row. extra_info.task is the full task as JSON text (one parquet column type for every task shape). */
export function datasetRow(task: Task, index: number, systemPrompt: string): Record<string, unknown> {
  const inBundle = `tasks/${task.id}`;
  const taskJson = JSON.stringify(task).split(JSON.stringify(task.dir).slice(1, -1)).join(inBundle);
  return {
    data_source: DATA_SOURCE,
    prompt: initialMessages(systemPrompt, task).map((m) => ({ role: m.role, content: m.content })),
    ability: 'terminal',
    reward_model: { style: 'rule', ground_truth: task.id },
    extra_info: { index, split: 'train', task_id: task.id, task_dir: inBundle, task: taskJson },
  };
}

async function walk(dir: string): Promise<string[]> {
  const out: string[] = [];
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  for (const e of entries.sort((a, b) => (a.name < b.name ? -1 : 1))) {
    const p = join(dir, e.name);
    if (e.isDirectory()) {
      if (!SKIP_DIRS.has(e.name)) out.push(...(await walk(p)));
    } else if (e.isFile() || (e.isSymbolicLink() && (await stat(p).catch(() => undefined))?.isFile())) {
      out.push(p);
    }
  }
  return out;
}

async function readBridgeVersion(bridgeDir: string): Promise<string> {
  const text = await readFile(join(bridgeDir, 'pyproject.toml'), 'utf8').catch(() => '');
  return /^version\s*=\s*"([^"]+)"/m.exec(text)?.[1] ?? 'unknown';
}

export function sha256(data: Buffer | string): string {
  return createHash('sha256').update(data).digest('hex');
}

function toPosix(p: string): string {
  return p.split(sep).join('/');
}

function safe(s: string): string {
  return s.replace(/[^A-Za-z0-9._-]+/g, '-').slice(0, 80);
}
