import { lstat, readdir, readFile, readlink, realpath } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { TbrlError } from '../errors';
import type { Task } from './model';
import { isPlainObject } from './fields';
import { weightsCandidates } from './weights';
import { DEFAULT_TASK_FORMAT, requireTaskFormat, taskFormat } from './formats';

/**
 * Task confinement: every path a task names (compose build contexts, Dockerfiles, env files and
 * volumes; Harbor environment/, tests/, solution/; run-tests.sh, solution.sh; weights; the
 * instruction) must resolve, after following links, inside the task directory. Task suites are
 * written by strangers: a `../../etc` build context or a `tests -> /root` link would carry host
 * files into the image, the trajectory and the model request.
 */

/** Where a path came from, for the error: the file that names it and the key or rule. */
export interface PathOrigin {
  file: string;
  key: string;
}

export const CONFINE_FIX = 'Keep every file a task uses inside its directory: copy the file in instead of linking to it, and use relative paths without "..".';

function isInside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel));
}

/** realpath of the longest existing prefix, plus the rest: a path that does not exist yet still resolves its links. */
async function resolveExisting(path: string): Promise<string> {
  const abs = resolve(path);
  try {
    return await realpath(abs);
  } catch {
    const parent = dirname(abs);
    if (parent === abs) return abs;
    return join(await resolveExisting(parent), abs.slice(parent.length + (parent.endsWith(sep) ? 0 : 1)));
  }
}

function escapes(origin: PathOrigin, named: string, real: string, taskDir: string): TbrlError {
  return new TbrlError(
    'TASK_PATH_ESCAPES',
    `${origin.file}: ${origin.key} names ${named}, which resolves to ${real}, outside the task directory ${taskDir} (rule: every path a task uses stays inside the task directory, links followed)`,
    CONFINE_FIX,
  );
}

/** The real path of `path` (absolute, or relative to `base`), refused when it leaves `taskDir`. */
export async function confinedPath(taskDir: string, path: string, origin: PathOrigin, base = taskDir): Promise<string> {
  const root = await resolveExisting(taskDir);
  const real = await resolveExisting(resolve(base, path));
  if (!isInside(root, real)) throw escapes(origin, path, real, root);
  return real;
}

/**
 * Checks a directory that is copied somewhere (tests/, solution/, a build context): every link
 * in it must point inside `taskDir`. Walks without following links; stops at `limit` entries so a
 * hostile tree cannot stall loading.
 */
export async function confineTree(taskDir: string, dir: string, origin: PathOrigin, limit = 100_000): Promise<void> {
  const root = await resolveExisting(taskDir);
  let seen = 0;
  const walk = async (at: string): Promise<void> => {
    const entries = await readdir(at, { withFileTypes: true }).catch(() => []);
    for (const entry of entries) {
      if (++seen > limit) return;
      const abs = join(at, entry.name);
      if (entry.isSymbolicLink()) {
        const target = await readlink(abs);
        const real = await resolveExisting(resolve(dirname(abs), target));
        if (!isInside(root, real)) throw escapes({ file: abs, key: `${origin.key} (symbolic link)` }, target, real, root);
      } else if (entry.isDirectory()) await walk(abs);
    }
  };
  const info = await lstat(dir).catch(() => undefined);
  if (info?.isDirectory()) await walk(dir);
}

/** A docker-compose key tbrl refuses by default: it hands the container a piece of the host. */
export interface PrivilegeFinding {
  file: string;
  key: string;
  message: string;
  /** The Docker socket or `/`: refused even when the key is allowed. */
  never?: boolean;
}

/** Binds no allow list opens: the Docker socket (root on the host) and the host's root directory. */
export function neverAllowedSource(source: string): boolean {
  const normal = resolve(source);
  return normal === '/' || /(^|\/)docker\.sock$/.test(normal) || normal === '/var/run' || normal === '/run';
}

/** Compose service keys that widen what a container can reach on the host. */
export const COMPOSE_PRIVILEGE_KEYS = ['privileged', 'cap_add', 'devices', 'network_mode', 'pid', 'ipc', 'security_opt', 'userns_mode', 'volumes'] as const;

/** A compose bind source that is Terminal-Bench's own log mount (`${T_BENCH_TASK_LOGS_PATH}`), which tbrl does not mount. */
const HARNESS_VARIABLE = /^\$\{?T_BENCH_[A-Z0-9_]+\}?$/;

function composeVolumeSource(volume: unknown): { source?: string; type: string } {
  if (typeof volume === 'string') {
    const parts = volume.split(':');
    if (parts.length < 2) return { type: 'volume' };
    const source = parts[0];
    // A bare name is a named volume; anything path-like is a bind of the host.
    return { source, type: /^[.~/$]/.test(source) || source.includes('/') ? 'bind' : 'volume' };
  }
  if (isPlainObject(volume)) return { source: typeof volume.source === 'string' ? volume.source : undefined, type: typeof volume.type === 'string' ? volume.type : 'volume' };
  return { type: 'volume' };
}

/**
 * Reads a Terminal-Bench docker-compose.yaml: confines every path it names and lists the privilege
 * keys its services set. Path escapes throw at once; privilege keys are returned for the caller to
 * refuse (or accept when the user allowed them by name).
 */
export async function inspectCompose(taskDir: string, composeFile: string): Promise<PrivilegeFinding[]> {
  const text = await readFile(composeFile, 'utf8').catch(() => undefined);
  if (text === undefined) return [];
  let data: unknown;
  try {
    data = parseYaml(text);
  } catch {
    return []; // the loader reports malformed YAML with its line
  }
  const services = isPlainObject(data) && isPlainObject(data.services) ? data.services : {};
  const findings: PrivilegeFinding[] = [];
  for (const [name, service] of Object.entries(services)) {
    if (!isPlainObject(service)) continue;
    const at = (key: string) => `services.${name}.${key}`;
    const build = service.build;
    // Compose resolves relative paths against the compose file's directory (the task root for Terminal-Bench, environment/ for Harbor).
    const base = dirname(composeFile);
    let context = base;
    if (typeof build === 'string') context = await confinedPath(taskDir, build, { file: composeFile, key: at('build') }, base);
    else if (isPlainObject(build)) {
      if (typeof build.context === 'string') context = await confinedPath(taskDir, build.context, { file: composeFile, key: at('build.context') }, base);
      if (typeof build.dockerfile === 'string') await confinedPath(taskDir, build.dockerfile, { file: composeFile, key: at('build.dockerfile') }, context);
    }
    const envFiles = typeof service.env_file === 'string' ? [service.env_file] : Array.isArray(service.env_file) ? service.env_file : [];
    for (const f of envFiles) {
      const path = typeof f === 'string' ? f : isPlainObject(f) && typeof f.path === 'string' ? f.path : undefined;
      if (path !== undefined) await confinedPath(taskDir, path, { file: composeFile, key: at('env_file') }, base);
    }
    for (const key of COMPOSE_PRIVILEGE_KEYS) {
      const value = service[key];
      if (value === undefined || value === null || value === false) continue;
      if (key === 'volumes') {
        if (!Array.isArray(value)) continue;
        for (const v of value) {
          const { source, type } = composeVolumeSource(v);
          if (type !== 'bind' || source === undefined || HARNESS_VARIABLE.test(source)) continue;
          findings.push({ file: composeFile, key: at('volumes'), message: `binds the host path ${source} into the container`, never: neverAllowedSource(resolve(base, source)) });
        }
        continue;
      }
      if ((key === 'network_mode' || key === 'pid' || key === 'ipc') && value !== 'host' && !String(value).startsWith('container:') && !String(value).startsWith('service:')) continue;
      if (Array.isArray(value) && value.length === 0) continue;
      findings.push({ file: composeFile, key: at(key), message: `sets ${key}: ${JSON.stringify(value)}` });
    }
  }
  return findings;
}

/** Short key names (`privileged`, `cap_add`, `volumes`…) the user allowed; a finding matches by its last segment. */
export function isAllowed(finding: Pick<PrivilegeFinding, 'key' | 'never'>, allow: readonly string[]): boolean {
  if (finding.never) return false;
  const leaf = finding.key.split('.').pop()!;
  return allow.includes(leaf) || allow.includes(finding.key);
}

export function privilegeError(findings: PrivilegeFinding[], settingHint: string): TbrlError {
  const first = findings[0];
  const list = findings.map((f) => `${f.key} ${f.message}${f.never ? ' (never allowed)' : ''}`).join('; ');
  const leaves = [...new Set(findings.filter((f) => !f.never).map((f) => f.key.split('.').pop()!))];
  const never = findings.filter((f) => f.never).map((f) => `${f.key} ${f.message}`);
  return new TbrlError(
    'PRIVILEGE_REFUSED',
    `${first.file}: ${list}. tbrl refuses keys that hand a container part of the host unless you allow them by name${leaves.length ? ` (${settingHint.replaceAll('%KEYS%', leaves.join(','))})` : ''}.`,
    [
      leaves.length ? `If you trust this source, allow the keys explicitly: ${settingHint.replaceAll('%KEYS%', leaves.join(','))}.` : '',
      never.length ? `Remove ${never.join('; ')}: the Docker socket and / are never allowed.` : 'The Docker socket and / are never allowed.',
    ].filter(Boolean).join(' '),
  );
}

export interface ConfineOptions {
  /** Privilege keys the user allowed by name (setting tbrl.sandbox.allowPrivileges, flag --allow-privilege). */
  allowPrivileges?: readonly string[];
}

export const ALLOW_HINT = 'pass `--allow-privilege %KEYS%` or set "tbrl.sandbox.allowPrivileges": ["%KEYS%"]';

/**
 * Confines a loaded task: throws `TASK_PATH_ESCAPES` naming the file, path and rule, or
 * `PRIVILEGE_REFUSED` naming the compose key. Returns the privilege keys that were allowed.
 */
export async function confineTask(task: Task, options: ConfineOptions = {}): Promise<string[]> {
  const dir = task.dir;
  const self = (file: string, key: string): PathOrigin => ({ file: join(dir, file), key });
  // The compose file first: its errors name the compose key, not the path the loader derived from it.
  const allowed: string[] = [];
  const format = taskFormat(task.format);
  if (format) {
    const findings = await inspectCompose(dir, join(dir, format.confine.composeFile));
    const refused = findings.filter((f) => !isAllowed(f, options.allowPrivileges ?? []));
    if (refused.length) throw privilegeError(refused, ALLOW_HINT);
    allowed.push(...findings.map((f) => f.key));
  }

  // A task without files of its own (a devcontainer workspace) is checked with the default layout.
  const layout = format ?? requireTaskFormat(DEFAULT_TASK_FORMAT);
  await confinedPath(dir, dir, self(layout.taskFile, 'the task directory'));
  await confinedPath(dir, join(dir, layout.taskFile), self(layout.taskFile, 'the task file'));
  for (const file of layout.confine.files) await confinedPath(dir, join(dir, file.path), self(file.path, file.key));
  if ('context' in task.environment) {
    const origin = self(layout.confine.contextOrigin, 'build context');
    const context = await confinedPath(dir, task.environment.context, origin);
    await confinedPath(dir, task.environment.dockerfile, { ...origin, key: 'dockerfile' }, context);
    await confineTree(dir, task.environment.context, origin);
  }
  await confinedPath(dir, task.tests.runner, self(layout.confine.runnerOrigin, 'the test runner'));
  await confinedPath(dir, task.tests.dir, self('tests', 'the tests directory'));
  await confineTree(dir, task.tests.dir, self('tests', 'the tests directory'));
  for (const weights of weightsCandidates(dir, task.tests.dir)) await confinedPath(dir, weights, { file: weights, key: 'test weights' });
  if (task.solution?.kind === 'script') {
    await confinedPath(dir, task.solution.path, { file: task.solution.path, key: 'the reference solution' });
  }
  for (const tree of layout.confine.trees) await confineTree(dir, join(dir, tree.path), self(tree.path, tree.key));
  await confinedPath(dir, join(dir, 'solution.yaml'), self('solution.yaml', 'the reference solution'));
  return allowed;
}

/** Env twin of the `tbrl.sandbox.allowPrivileges` setting, for front ends that spawn the CLI. */
export const ALLOW_PRIVILEGES_ENV = 'TBRL_ALLOW_PRIVILEGES';

/** The allow list from `--allow-privilege` values (repeatable, comma lists too) and TBRL_ALLOW_PRIVILEGES. */
export function allowListFrom(flag: unknown, env: NodeJS.ProcessEnv = process.env): string[] {
  const raw = [...(Array.isArray(flag) ? flag : flag === undefined ? [] : [flag]), env[ALLOW_PRIVILEGES_ENV] ?? ''];
  return [...new Set(raw.flatMap((v) => String(v).split(',')).map((v) => v.trim()).filter(Boolean))];
}
