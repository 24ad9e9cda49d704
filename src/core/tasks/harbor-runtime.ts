import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { TbrlError } from '../errors';
import { FieldReader, isPlainObject } from './fields';
import { exists } from './fsutil';

/**
 * What a Harbor task.toml asks of the runtime (Harbor 1.3 semantics), read next to the Task model.
 * The fields stay verbatim in `extra.taskToml` for round trips; this is the reading the sandbox,
 * the oracle and the verifier act on. Anything tbrl cannot honour here is listed in `refusals`,
 * one sentence naming the field, and a run refuses to start rather than run the task differently.
 */
export interface HarborHealthcheck {
  command: string;
  intervalSec: number;
  timeoutSec: number;
  startPeriodSec: number;
  startIntervalSec: number;
  retries: number;
}

export interface HarborPhase {
  /** User name or uid the phase runs as; undefined: the image's USER. */
  user?: string;
  /** Environment templates (`${VAR}`, `${VAR:-default}`), resolved from the host at run time. */
  env: Record<string, string>;
}

export interface HarborStep {
  name: string;
  dir: string;
  instruction: string;
  agentTimeoutSec?: number;
  verifierTimeoutSec?: number;
  verifierEnv: Record<string, string>;
  /** A number gates on the step's reward; a table gates on each named metric. */
  minReward?: number | Record<string, number>;
  healthcheck?: HarborHealthcheck;
  /** steps/<name>/tests, layered over the task's tests/ (absent: the task's tests/ alone). */
  testsDir?: string;
  /** steps/<name>/solution/solve.sh. */
  solution?: string;
  /** steps/<name>/workdir, copied into the working directory before the step (then setup.sh runs). */
  workdirDir?: string;
}

export interface HarborSidecar {
  name: string;
  image?: string;
  build?: { context: string; dockerfile?: string };
  environment: Record<string, string>;
  command?: string[];
  entrypoint?: string[];
  healthcheck?: { test: string[]; intervalSec: number; timeoutSec: number; retries: number; startPeriodSec: number };
}

export interface HarborRuntime {
  agent: HarborPhase;
  /** `network`: the verifier's own network_mode (only a separate verifier can have one of its own). */
  verifier: HarborPhase & { mode: 'shared' | 'separate'; network?: 'public' | 'no-network' };
  solution: { env: Record<string, string> };
  environment: {
    network: 'public' | 'no-network';
    cpus?: number;
    memoryMb?: number;
    storageMb?: number;
    workdir?: string;
    env: Record<string, string>;
    healthcheck?: HarborHealthcheck;
  };
  /** Services of environment/docker-compose.yaml besides `main`, started on the task's own network. */
  sidecars: HarborSidecar[];
  composeFile?: string;
  steps?: HarborStep[];
  /** How per-step rewards make the trial's reward (Harbor's multi_step_reward_strategy; default mean). */
  stepRewardStrategy: 'mean' | 'final';
  /** Fields that cannot be honoured here, each a sentence naming the field. */
  refusals: string[];
  /** Keys Harbor 1.3's schema does not know (Harbor ignores them, and so does tbrl), or knows but that have no effect here. */
  ignored: string[];
  /** Whether the task has a root instruction.md (optional for [[steps]] tasks; writers keep its absence). */
  rootInstruction: boolean;
}

const toStringMap = (value: unknown): Record<string, string> =>
  isPlainObject(value) ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, String(v)])) : {};

function readHealthcheck(f: FieldReader, path: string[]): HarborHealthcheck | undefined {
  if (!f.table(path)) return undefined;
  return {
    command: f.requiredString([...path, 'command'], `Give the healthcheck a shell command, e.g.\n[${path.join('.')}]\ncommand = "curl -sf http://localhost:8000/health"`),
    intervalSec: f.number([...path, 'interval_sec'], { positive: true }) ?? 5,
    timeoutSec: f.number([...path, 'timeout_sec'], { positive: true }) ?? 30,
    startPeriodSec: f.number([...path, 'start_period_sec']) ?? 0,
    startIntervalSec: f.number([...path, 'start_interval_sec'], { positive: true }) ?? 5,
    retries: f.number([...path, 'retries']) ?? 3,
  };
}

function userOf(f: FieldReader, path: string[]): string | undefined {
  return f.string(path);
}

/** network_mode wins over allow_internet; a phase's own network_mode wins over [environment]'s (Harbor's precedence). */
function networkOf(f: FieldReader, refusals: string[]): 'public' | 'no-network' {
  const modes = (['agent', 'environment'] as const).map((t) => f.string([t, 'network_mode']));
  const mode = modes.find((m) => m !== undefined);
  if (mode === undefined) return (f.boolean(['environment', 'allow_internet']) ?? true) ? 'public' : 'no-network';
  if (mode === 'public' || mode === 'no-network') return mode;
  if (mode === 'allowlist') {
    const hosts = f.stringArray(['agent', 'allowed_hosts']) ?? f.stringArray(['environment', 'allowed_hosts']) ?? [];
    refusals.push(`network_mode = "allowlist" (allowed_hosts: ${hosts.join(', ') || 'none'}) cannot be enforced here: tbrl has no egress proxy. Use network_mode = "public" or "no-network".`);
    return 'no-network';
  }
  return f.fail([modes[0] !== undefined ? 'agent' : 'environment', 'network_mode'], `must be "public", "no-network" or "allowlist", got ${JSON.stringify(mode)}`);
}

function durationSec(value: unknown): number {
  if (typeof value === 'number') return value;
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(String(value ?? '').trim());
  if (!m) return 0;
  const n = Number(m[1]);
  return m[2] === 'ms' ? n / 1000 : m[2] === 'm' ? n * 60 : m[2] === 'h' ? n * 3600 : n;
}

const argvOf = (value: unknown): string[] | undefined =>
  Array.isArray(value) ? value.map(String) : typeof value === 'string' ? ['/bin/sh', '-c', value] : undefined;

async function readCompose(envDir: string, refusals: string[]): Promise<{ file?: string; sidecars: HarborSidecar[] }> {
  for (const name of ['docker-compose.yaml', 'docker-compose.yml', 'compose.yaml']) {
    const file = join(envDir, name);
    const text = await readFile(file, 'utf8').catch(() => undefined);
    if (text === undefined) continue;
    let doc: unknown;
    try {
      doc = parseYaml(text);
    } catch (err) {
      throw new TbrlError('TASK_FILE_MALFORMED', `${file}: not valid YAML: ${(err as Error).message.split('\n')[0]}`, 'Fix the compose file; it defines `main` (the agent container) and the task\'s other services.');
    }
    const services = isPlainObject(doc) && isPlainObject(doc.services) ? doc.services : {};
    const sidecars: HarborSidecar[] = [];
    for (const [name, raw] of Object.entries(services)) {
      if (name === 'main' || !isPlainObject(raw)) {
        if (name === 'main' && isPlainObject(raw)) {
          const ignored = Object.keys(raw).filter((k) => k !== 'depends_on' && k !== 'build' && k !== 'image');
          if (ignored.length) refusals.push(`compose service 'main': key(s) ${ignored.join(', ')} are not applied to the agent container; set them in task.toml [environment] instead.`);
        }
        continue;
      }
      const build = typeof raw.build === 'string' ? { context: join(envDir, raw.build) } : isPlainObject(raw.build) ? { context: join(envDir, String(raw.build.context ?? '.')), dockerfile: raw.build.dockerfile === undefined ? undefined : String(raw.build.dockerfile) } : undefined;
      const hc = isPlainObject(raw.healthcheck) ? raw.healthcheck : undefined;
      const env = Array.isArray(raw.environment)
        ? Object.fromEntries(raw.environment.map((e) => String(e)).map((e) => [e.split('=')[0], e.slice(e.indexOf('=') + 1)]))
        : toStringMap(raw.environment);
      if (!build && typeof raw.image !== 'string') refusals.push(`compose service '${name}' has neither image nor build.`);
      sidecars.push({
        name,
        image: typeof raw.image === 'string' ? raw.image : undefined,
        build,
        environment: env,
        command: argvOf(raw.command),
        entrypoint: argvOf(raw.entrypoint),
        healthcheck: hc && Array.isArray(hc.test) ? {
          test: hc.test.map(String),
          intervalSec: durationSec(hc.interval ?? '5s') || 5,
          timeoutSec: durationSec(hc.timeout ?? '30s') || 30,
          retries: Number(hc.retries ?? 3),
          startPeriodSec: durationSec(hc.start_period ?? 0),
        } : undefined,
      });
      const ignored = Object.keys(raw).filter((k) => !['image', 'build', 'environment', 'command', 'entrypoint', 'healthcheck', 'expose', 'depends_on'].includes(k));
      if (ignored.length) refusals.push(`compose service '${name}': key(s) ${ignored.join(', ')} are not supported here (tbrl starts sidecars with image/build, environment, command, entrypoint and healthcheck only).`);
    }
    return { file, sidecars };
  }
  return { sidecars: [] };
}

async function readSteps(dir: string, f: FieldReader, data: Record<string, unknown>): Promise<HarborStep[] | undefined> {
  const raw = data.steps;
  if (raw === undefined) return undefined;
  if (!Array.isArray(raw) || raw.length === 0 || raw.some((s) => !isPlainObject(s))) f.fail(['steps'], 'must be one or more [[steps]] tables');
  const steps: HarborStep[] = [];
  for (const [i, s] of (raw as Record<string, unknown>[]).entries()) {
    const name = typeof s.name === 'string' && /^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(s.name) ? s.name : f.fail(['steps'], `entry ${i + 1} needs name = "<folder under steps/>" (letters, digits, . _ -)`);
    const stepDir = join(dir, 'steps', name);
    const instructionFile = join(stepDir, 'instruction.md');
    const instruction = await readFile(instructionFile, 'utf8').catch(() => undefined);
    if (instruction === undefined || instruction.trim() === '') {
      throw new TbrlError('TASK_NO_INSTRUCTION', `${instructionFile}: step '${name}' needs a non-empty instruction.md`, `Write the step's instruction into steps/${name}/instruction.md.`);
    }
    const agent = isPlainObject(s.agent) ? s.agent : {};
    const verifier = isPlainObject(s.verifier) ? s.verifier : {};
    const min = s.min_reward;
    const stepReader = new FieldReader({ ...f.doc, data: s, lineOf: () => f.doc.lineOf(['steps']) }, '');
    steps.push({
      name,
      dir: stepDir,
      instruction: instruction.replace(/\n$/, ''),
      agentTimeoutSec: typeof agent.timeout_sec === 'number' ? agent.timeout_sec : undefined,
      verifierTimeoutSec: typeof verifier.timeout_sec === 'number' ? verifier.timeout_sec : undefined,
      verifierEnv: toStringMap(verifier.env),
      minReward: typeof min === 'number' ? min : isPlainObject(min) ? Object.fromEntries(Object.entries(min).map(([k, v]) => [k, Number(v)])) : undefined,
      healthcheck: readHealthcheck(stepReader, ['healthcheck']),
      testsDir: (await exists(join(stepDir, 'tests'))) ? join(stepDir, 'tests') : undefined,
      solution: (await exists(join(stepDir, 'solution', 'solve.sh'))) ? join(stepDir, 'solution', 'solve.sh') : undefined,
      workdirDir: (await exists(join(stepDir, 'workdir'))) ? join(stepDir, 'workdir') : undefined,
    });
  }
  return steps;
}

/** Reads the runtime settings of a parsed task.toml (see HarborRuntime). */
export async function readHarborRuntime(dir: string, f: FieldReader): Promise<HarborRuntime> {
  const data = f.doc.data;
  const refusals: string[] = [];
  const env = (path: string[]) => {
    const t = f.table(path);
    return t ? toStringMap(t) : {};
  };
  const modeRaw = f.string(['verifier', 'environment_mode']);
  if (modeRaw !== undefined && modeRaw !== 'shared' && modeRaw !== 'separate') f.fail(['verifier', 'environment_mode'], `must be "shared" or "separate", got ${JSON.stringify(modeRaw)}`);
  const verifierEnvTable = f.table(['verifier', 'environment']);
  if (verifierEnvTable) refusals.push('[verifier.environment] (a verifier image of its own) is not supported here: tbrl runs a separate verifier from the agent\'s final filesystem. Remove the table and keep environment_mode = "separate".');
  const mode = modeRaw === 'separate' || (modeRaw === undefined && verifierEnvTable) ? 'separate' : 'shared';

  const gpus = f.number(['environment', 'gpus']);
  if (gpus !== undefined && gpus > 0) refusals.push(`[environment] gpus = ${gpus}: tbrl's sandboxes have no GPUs.`);
  if (f.table(['environment', 'tpu'])) refusals.push('[environment] tpu: tbrl\'s sandboxes have no TPUs.');
  const os = f.string(['environment', 'os']);
  if (os !== undefined && os.toLowerCase() !== 'linux') refusals.push(`[environment] os = "${os}": tbrl runs Linux containers only.`);
  const mcp = (data.environment as Record<string, unknown> | undefined)?.mcp_servers;
  if (Array.isArray(mcp) && mcp.length > 0) refusals.push(`[environment] mcp_servers (${mcp.length}): tbrl's agent has no MCP client.`);
  const collect = (data.verifier as Record<string, unknown> | undefined)?.collect;
  if (Array.isArray(collect) && collect.length > 0) refusals.push('[[verifier.collect]] hooks are not run here.');
  const verifierNet = f.string(['verifier', 'network_mode']);
  const network = networkOf(f, refusals);
  if (verifierNet !== undefined && verifierNet !== network && mode === 'shared') refusals.push(`[verifier] network_mode = "${verifierNet}" differs from the agent's ("${network}") but the verifier shares the agent's container; set environment_mode = "separate".`);

  const compose = await readCompose(join(dir, 'environment'), refusals);
  const strategy = f.string(['multi_step_reward_strategy']);
  if (strategy !== undefined && strategy !== 'mean' && strategy !== 'final') f.fail(['multi_step_reward_strategy'], `must be "mean" or "final", got ${JSON.stringify(strategy)}`);
  return {
    agent: { user: userOf(f, ['agent', 'user']), env: env(['agent', 'env']) },
    verifier: { user: userOf(f, ['verifier', 'user']), env: env(['verifier', 'env']), mode, ...(verifierNet === 'public' || verifierNet === 'no-network' ? { network: verifierNet } : {}) },
    solution: { env: env(['solution', 'env']) },
    environment: {
      network,
      cpus: f.number(['environment', 'cpus'], { positive: true }),
      memoryMb: f.number(['environment', 'memory_mb'], { positive: true }) ?? sizeMb(f, ['environment', 'memory']),
      storageMb: f.number(['environment', 'storage_mb'], { positive: true }) ?? sizeMb(f, ['environment', 'storage']),
      workdir: f.string(['environment', 'workdir']),
      env: env(['environment', 'env']),
      healthcheck: readHealthcheck(f, ['environment', 'healthcheck']),
    },
    sidecars: compose.sidecars,
    ...(compose.file ? { composeFile: compose.file } : {}),
    steps: await readSteps(dir, f, data),
    stepRewardStrategy: strategy === 'final' ? 'final' : 'mean',
    refusals,
    ignored: ignoredKeys(data),
    rootInstruction: await exists(join(dir, 'instruction.md')),
  };
}

/** Harbor's deprecated `memory = "4G"` / `storage = "10G"`. */
function sizeMb(f: FieldReader, path: string[]): number | undefined {
  const value = f.string(path);
  if (value === undefined) return undefined;
  const m = /^(\d+(?:\.\d+)?)\s*([GMK])B?$/i.exec(value.trim());
  if (!m) return f.fail(path, `must be a size like "4G" or "512M", got ${JSON.stringify(value)}`);
  const n = Number(m[1]);
  const unit = m[2].toUpperCase();
  return Math.round(unit === 'G' ? n * 1024 : unit === 'M' ? n : n / 1024);
}

/**
 * `${VAR}` and `${VAR:-default}` resolved from the host environment, as Harbor resolves task env.
 * A variable that is unset and has no default is an error naming the field, never an empty string.
 */
export function resolveEnvTemplates(env: Record<string, string>, hostEnv: NodeJS.ProcessEnv, field: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, template] of Object.entries(env)) {
    out[key] = template.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g, (_m, name: string, fallback: string | undefined) => {
      const value = hostEnv[name];
      if (value !== undefined && value !== '') return value;
      if (fallback !== undefined) return fallback;
      throw new TbrlError(
        'TASK_ENV_UNSET',
        `${field}.${key} = "${template}" needs \${${name}}, which is not set in tbrl's environment`,
        `Export ${name} before running (e.g. \`${name}=... tbrl run ...\`), or give a default in task.toml: "\${${name}:-value}".`,
      );
    });
  }
  return out;
}

/** Refuses a task whose task.toml asks for what cannot be honoured here, naming every field. */
export function assertHarborRuntimeSupported(runtime: HarborRuntime | undefined, taskId: string): void {
  if (!runtime || runtime.refusals.length === 0) return;
  throw new TbrlError(
    'TASK_UNSUPPORTED_FIELD',
    `Task ${taskId} asks for what tbrl cannot honour here: ${runtime.refusals.join(' ')}`,
    'Change or remove the named field(s) in task.toml (or environment/docker-compose.yaml); running the task without them would score a different task.',
  );
}

/** Harbor 1.3's task.toml keys per table (harbor.models.task.config); `*` tables are free-form. */
const HARBOR_KEYS: Record<string, string[] | '*'> = {
  '': ['version', 'schema_version', 'task', 'metadata', 'verifier', 'agent', 'environment', 'solution', 'source', 'multi_step_reward_strategy', 'steps', 'artifacts'],
  task: ['name', 'version', 'description', 'authors', 'keywords'],
  metadata: '*',
  verifier: ['timeout_sec', 'env', 'user', 'environment_mode', 'environment', 'collect', 'network_mode', 'allowed_hosts'],
  agent: ['timeout_sec', 'user', 'env', 'network_mode', 'allowed_hosts'],
  environment: ['build_timeout_sec', 'docker_image', 'os', 'cpus', 'memory_mb', 'storage_mb', 'gpus', 'gpu_types', 'tpu', 'allow_internet', 'mcp_servers', 'env', 'skills_dir', 'healthcheck', 'workdir', 'memory', 'storage', 'network_mode', 'allowed_hosts'],
  solution: ['env'],
};
/** Known keys that tbrl does not act on (none of them changes what the verifier scores). */
const NO_EFFECT: Record<string, string> = {
  artifacts: 'artifacts are not collected (the run directory keeps the changed files instead)',
  'environment.skills_dir': 'there is no agent skills directory here',
};

function ignoredKeys(data: Record<string, unknown>): string[] {
  const out: string[] = [];
  for (const [key, value] of Object.entries(data)) {
    if (!(HARBOR_KEYS[''] as string[]).includes(key)) out.push(`'${key}' is not a Harbor 1.3 task.toml key; it is ignored.`);
    else if (NO_EFFECT[key] && !(Array.isArray(value) && value.length === 0)) out.push(`'${key}': ${NO_EFFECT[key]}.`);
    const known = HARBOR_KEYS[key];
    if (!known || known === '*' || !isPlainObject(value)) continue;
    for (const sub of Object.keys(value)) {
      const path = `${key}.${sub}`;
      if (!known.includes(sub)) out.push(`'${path}' is not a Harbor 1.3 task.toml key; it is ignored.`);
      else if (NO_EFFECT[path]) out.push(`'${path}': ${NO_EFFECT[path]}.`);
    }
  }
  return out;
}
