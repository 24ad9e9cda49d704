import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { parse, printParseErrorCode, type ParseError } from 'jsonc-parser';
import type Docker from 'dockerode';
import { DevcontainerError } from './errors';
import { TbrlError } from '../errors';
import { isAllowed, neverAllowedSource, privilegeError, type PrivilegeFinding } from '../tasks/confine';

/** The parts of devcontainer.json a sandbox uses, with paths resolved and variables expanded. */
export interface DevcontainerConfig {
  configPath: string;
  image?: string;
  build?: { dockerfile: string; context: string; args: Record<string, string> };
  containerEnv: Record<string, string>;
  workspaceFolder: string;
  mounts: Docker.MountSettings[];
  /** onCreateCommand, updateContentCommand, postCreateCommand in lifecycle order. */
  lifecycle: Array<{ name: string; command: string | string[] }>;
  /** Privilege keys present and allowed by the user (recorded in the run header). */
  allowedPrivileges: string[];
  /** Docker settings from allowed keys (privileged, capAdd, securityOpt). */
  hostConfig: { Privileged?: boolean; CapAdd?: string[]; SecurityOpt?: string[] };
}

export interface DevcontainerOptions {
  /** Keys allowed by name: mounts, runArgs, privileged, capAdd, securityOpt, localEnv. */
  allowPrivileges?: readonly string[];
}

export const DEVCONTAINER_ALLOW_HINT = 'pass `tbrl run-workspace --allow-privilege %KEYS%` or set "tbrl.sandbox.allowPrivileges": ["%KEYS%"]';

/** Host variables whose names say they hold a secret: never copied into a container, allowed or not. */
const SECRET_NAME = /KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE|SESSION/i;

function realOrSelf(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return resolve(path);
  }
}

const EXAMPLE = `{
  // comments and trailing commas are fine
  "build": { "dockerfile": "Dockerfile", "context": ".." },
  "workspaceFolder": "/workspaces/project",
  "postCreateCommand": "pip install -e .",
}`;

export function findDevcontainerConfig(workspaceFolder: string, configPath?: string): string {
  const candidates = configPath
    ? [resolve(workspaceFolder, configPath)]
    : [join(workspaceFolder, '.devcontainer', 'devcontainer.json'), join(workspaceFolder, '.devcontainer.json')];
  const found = candidates.find((p) => existsSync(p));
  if (!found) throw new DevcontainerError(candidates[0], 'no devcontainer configuration found', EXAMPLE);
  return found;
}

function lineCol(text: string, offset: number): string {
  const before = text.slice(0, offset).split('\n');
  return `line ${before.length}, column ${before[before.length - 1].length + 1}`;
}

export function parseDevcontainer(workspaceFolder: string, configPath: string, options: DevcontainerOptions = {}): DevcontainerConfig {
  const text = readFileSync(configPath, 'utf8');
  const errors: ParseError[] = [];
  const raw = parse(text, errors, { allowTrailingComma: true, disallowComments: false }) as Record<string, unknown> | undefined;
  if (errors.length) {
    const detail = errors.slice(0, 3).map((e) => `${printParseErrorCode(e.error)} at ${lineCol(text, e.offset)}`).join('; ');
    throw new DevcontainerError(configPath, `not valid JSON with comments: ${detail}`, EXAMPLE);
  }
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw new DevcontainerError(configPath, 'the top level must be an object', EXAMPLE);

  const local = resolve(workspaceFolder);
  const findings: PrivilegeFinding[] = [];
  // Which host variables a value reads, before expansion: a secret must be refused before it is read.
  const hostVariables = (value: string): string[] => [...value.matchAll(/\$\{(?:localEnv|env):([^}:]+)[^}]*\}/g)].map((m) => m[1]);
  const containerWs = typeof raw.workspaceFolder === 'string' ? raw.workspaceFolder : `/workspaces/${basename(local)}`;
  const expand = (value: string): string =>
    value.replace(/\$\{([^}]+)\}/g, (all, expr: string) => {
      const [kind, name, fallback] = expr.split(':');
      switch (kind) {
        case 'localWorkspaceFolder': return local;
        case 'localWorkspaceFolderBasename': return basename(local);
        case 'containerWorkspaceFolder': return containerWs;
        case 'containerWorkspaceFolderBasename': return basename(containerWs);
        case 'localEnv':
        case 'env': return process.env[name] ?? fallback ?? '';
        case 'devcontainerId': return basename(local);
        default: return all;
      }
    });
  const configDir = dirname(configPath);
  const str = (key: string, v: unknown): string | undefined => {
    if (v === undefined) return undefined;
    if (typeof v !== 'string') throw new DevcontainerError(configPath, `"${key}" must be a string`, EXAMPLE);
    return expand(v);
  };
  const record = (key: string, v: unknown): Record<string, string> => {
    if (v === undefined) return {};
    if (!v || typeof v !== 'object' || Array.isArray(v)) throw new DevcontainerError(configPath, `"${key}" must be an object of strings`, EXAMPLE);
    return Object.fromEntries(Object.entries(v).map(([k, val]) => [k, expand(String(val))]));
  };

  const image = str('image', raw.image);
  const buildRaw = (raw.build ?? undefined) as Record<string, unknown> | undefined;
  const dockerfile = str('build.dockerfile', buildRaw?.dockerfile) ?? str('dockerFile', raw.dockerFile);
  let build: DevcontainerConfig['build'];
  if (dockerfile) {
    const context = resolve(configDir, str('build.context', buildRaw?.context) ?? str('context', raw.context) ?? '.');
    build = { dockerfile: resolve(configDir, dockerfile), context, args: record('build.args', buildRaw?.args) };
    for (const [key, path] of [['build.context', context], ['build.dockerfile', build.dockerfile]] as const) {
      const real = realOrSelf(path);
      const rel = relative(realOrSelf(local), real);
      if (rel.startsWith('..') || isAbsolute(rel)) {
        throw new TbrlError('TASK_PATH_ESCAPES', `${configPath}: ${key} resolves to ${real}, outside the workspace ${local} (rule: a devcontainer builds only from inside its workspace, links followed)`, 'Point build.context and build.dockerfile inside the workspace folder.');
      }
    }
  }
  if (!image && !build) throw new DevcontainerError(configPath, 'needs "image" or "build.dockerfile" (Docker Compose configurations are not supported)', EXAMPLE);

  const mounts: Docker.MountSettings[] = [];
  if (raw.mounts !== undefined) {
    if (!Array.isArray(raw.mounts)) throw new DevcontainerError(configPath, '"mounts" must be an array', EXAMPLE);
    for (const m of raw.mounts) {
      const mount = parseMount(configPath, m, expand);
      mounts.push(mount);
      const bind = mount.Type === 'bind';
      findings.push({
        file: configPath,
        key: 'mounts',
        message: `${bind ? 'binds the host path' : `mounts the ${mount.Type}`} ${mount.Source || '(anonymous)'} at ${mount.Target}`,
        never: bind && (neverAllowedSource(mount.Source) || neverAllowedSource(realOrSelf(mount.Source))),
      });
    }
  }
  const hostConfig: DevcontainerConfig['hostConfig'] = {};
  if (raw.runArgs !== undefined) findings.push({ file: configPath, key: 'runArgs', message: `passes docker run arguments ${JSON.stringify(raw.runArgs)} (when allowed, tbrl still does not apply them)` });
  if (raw.privileged === true) {
    findings.push({ file: configPath, key: 'privileged', message: 'asks for a privileged container' });
    hostConfig.Privileged = true;
  }
  if (Array.isArray(raw.capAdd) && raw.capAdd.length) {
    findings.push({ file: configPath, key: 'capAdd', message: `adds capabilities ${raw.capAdd.join(', ')}` });
    hostConfig.CapAdd = raw.capAdd.map(String);
  }
  if (Array.isArray(raw.securityOpt) && raw.securityOpt.length) {
    findings.push({ file: configPath, key: 'securityOpt', message: `sets security options ${raw.securityOpt.join(', ')}` });
    hostConfig.SecurityOpt = raw.securityOpt.map(String);
  }
  // Anything that reads a host variable (containerEnv, remoteEnv, lifecycle commands, mounts) copies it into the container.
  const walk = (value: unknown, path: string): void => {
    if (typeof value === 'string') {
      for (const variable of hostVariables(value)) {
        const secret = SECRET_NAME.test(variable);
        findings.push({ file: configPath, key: `${path}.localEnv`, message: `copies the host variable ${variable} into the container${secret ? ' (its name says it is a secret: never allowed)' : ''}`, never: secret });
      }
    } else if (Array.isArray(value)) value.forEach((v, i) => walk(v, `${path}[${i}]`));
    else if (value && typeof value === 'object') for (const [k, v] of Object.entries(value)) walk(v, path ? `${path}.${k}` : k);
  };
  walk(raw, '');
  const refused = findings.filter((f) => !isAllowed(f, options.allowPrivileges ?? []));
  if (refused.length) throw privilegeError(refused, DEVCONTAINER_ALLOW_HINT);

  const lifecycle: DevcontainerConfig['lifecycle'] = [];
  for (const name of ['onCreateCommand', 'updateContentCommand', 'postCreateCommand']) {
    const v = raw[name];
    if (v === undefined) continue;
    if (typeof v === 'string') lifecycle.push({ name, command: expand(v) });
    else if (Array.isArray(v)) lifecycle.push({ name, command: v.map((a) => expand(String(a))) });
    else if (v && typeof v === 'object') {
      // The object form runs its commands in parallel in the spec; in order here, which is a valid serialisation.
      for (const [key, c] of Object.entries(v)) lifecycle.push({ name: `${name}.${key}`, command: Array.isArray(c) ? c.map((a) => expand(String(a))) : expand(String(c)) });
    } else throw new DevcontainerError(configPath, `"${name}" must be a string, an array or an object`, EXAMPLE);
  }

  return {
    configPath,
    image,
    build,
    containerEnv: { ...record('containerEnv', raw.containerEnv), ...record('remoteEnv', raw.remoteEnv) },
    workspaceFolder: containerWs,
    mounts,
    lifecycle,
    allowedPrivileges: [...new Set(findings.map((f) => f.key))],
    hostConfig,
  };
}

function parseMount(configPath: string, m: unknown, expand: (s: string) => string): Docker.MountSettings {
  let fields: Record<string, string>;
  if (typeof m === 'string') {
    fields = Object.fromEntries(
      m.split(',').map((kv) => {
        const eq = kv.indexOf('=');
        return eq < 0 ? [kv.trim(), 'true'] : [kv.slice(0, eq).trim(), expand(kv.slice(eq + 1).trim())];
      }),
    );
  } else if (m && typeof m === 'object') {
    fields = Object.fromEntries(Object.entries(m).map(([k, v]) => [k, expand(String(v))]));
  } else throw new DevcontainerError(configPath, `mount ${JSON.stringify(m)} must be "source=...,target=...,type=bind" or an object`);
  const target = fields.target ?? fields.destination ?? fields.dst;
  const type = (fields.type ?? 'volume') as Docker.MountType;
  if (!target) throw new DevcontainerError(configPath, `mount ${JSON.stringify(m)} has no target`, '"mounts": ["source=${localWorkspaceFolder}/data,target=/data,type=bind"]');
  return { Type: type, Source: fields.source ?? fields.src ?? '', Target: target, ReadOnly: fields.readonly === 'true' || fields.ro === 'true' };
}
