import { existsSync, readFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { parse, printParseErrorCode, type ParseError } from 'jsonc-parser';
import type Docker from 'dockerode';
import { DevcontainerError } from './errors';

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

export function parseDevcontainer(workspaceFolder: string, configPath: string): DevcontainerConfig {
  const text = readFileSync(configPath, 'utf8');
  const errors: ParseError[] = [];
  const raw = parse(text, errors, { allowTrailingComma: true, disallowComments: false }) as Record<string, unknown> | undefined;
  if (errors.length) {
    const detail = errors.slice(0, 3).map((e) => `${printParseErrorCode(e.error)} at ${lineCol(text, e.offset)}`).join('; ');
    throw new DevcontainerError(configPath, `not valid JSON with comments: ${detail}`, EXAMPLE);
  }
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw new DevcontainerError(configPath, 'the top level must be an object', EXAMPLE);

  const local = resolve(workspaceFolder);
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
  }
  if (!image && !build) throw new DevcontainerError(configPath, 'needs "image" or "build.dockerfile" (Docker Compose configurations are not supported)', EXAMPLE);

  const mounts: Docker.MountSettings[] = [];
  if (raw.mounts !== undefined) {
    if (!Array.isArray(raw.mounts)) throw new DevcontainerError(configPath, '"mounts" must be an array', EXAMPLE);
    for (const m of raw.mounts) mounts.push(parseMount(configPath, m, expand));
  }

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
