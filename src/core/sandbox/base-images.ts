import { existsSync, readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import type { DockerConnection } from './docker-client';
import { ImageBuildError } from './errors';
import { TbrlError } from '../errors';
import { packageRoot } from './package-root';

export interface BaseImageMapOptions {
  /** Extra `pattern → stand-in` entries (tbrl.sandbox.baseImageMap), over sandbox/images.json. */
  baseImageMap?: Record<string, string>;
  /**
   * auto (default): substitute only images that are neither local nor pullable; always: substitute
   * every mapped image that is not local without asking the registry; never: no substitution.
   */
  substitute?: 'auto' | 'always' | 'never';
  /** Image builds: `buildkit` (default, the engine's BuildKit through its API) or `legacy` (the classic builder). */
  builder?: 'buildkit' | 'legacy';
  /** How long to wait for a registry answer before deciding an image cannot be pulled. */
  registryTimeoutMs?: number;
}

export interface BaseImageMap {
  /** Ordered most specific first; user entries before built-in ones. */
  substitutions: Array<{ pattern: string; image: string; regex: RegExp }>;
  /** Stand-in tag → recipe file under sandbox/images/, built on demand when absent. */
  standins: Record<string, string>;
}

interface MapFile {
  substitutions?: Record<string, string>;
  standins?: Record<string, string>;
}

function readMapFile(path: string, origin: string): MapFile {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new TbrlError('BASE_IMAGE_MAP_INVALID', `${origin} ${path} could not be read as JSON (${(err as Error).message}).`,
      'point it at a JSON file such as {"substitutions": {"python:3*": "tbrl-standin/python:3"}}.', { cause: err });
  }
  if (!parsed || typeof parsed !== 'object') throw new TbrlError('BASE_IMAGE_MAP_INVALID', `${origin} ${path} is not a JSON object.`, 'use {"substitutions": {"image-glob": "local-image"}}.');
  const obj = parsed as Record<string, unknown>;
  // A flat {"pattern": "image"} file is accepted as well as the {"substitutions": ...} shape.
  if (obj.substitutions && typeof obj.substitutions === 'object') return obj as MapFile;
  const flat: Record<string, string> = {};
  for (const [k, v] of Object.entries(obj)) if (typeof v === 'string' && !k.startsWith('$')) flat[k] = v;
  return { substitutions: flat };
}

function globToRegex(glob: string): RegExp {
  return new RegExp(`^${glob.split('*').map((s) => s.replace(/[.+?^${}()|[\]\\/]/g, '\\$&')).join('.*')}$`);
}

export function loadBaseImageMap(options: BaseImageMapOptions = {}): BaseImageMap {
  const builtin = readMapFile(join(packageRoot(), 'sandbox', 'images.json'), 'The built-in base-image map');
  const fromEnv = process.env.TBRL_BASE_IMAGE_MAP ? readMapFile(process.env.TBRL_BASE_IMAGE_MAP, 'TBRL_BASE_IMAGE_MAP') : {};
  const user = { ...fromEnv.substitutions, ...options.baseImageMap };
  const entries = (rec: Record<string, string>) =>
    Object.entries(rec)
      .map(([pattern, image]) => ({ pattern, image, regex: globToRegex(pattern) }))
      // More literal characters = more specific: `python:3.13*` wins over `python:3*`.
      .sort((a, b) => b.pattern.replace(/\*/g, '').length - a.pattern.replace(/\*/g, '').length);
  return {
    substitutions: [...entries(user), ...entries(builtin.substitutions ?? {})],
    standins: { ...builtin.standins, ...fromEnv.standins },
  };
}

/** `python` → `python:latest`; `docker.io/library/python:3` → `python:3` (how maps are written). */
export function normalizeImageRef(ref: string): string {
  let r = ref.trim().replace(/^docker\.io\/library\//, '').replace(/^docker\.io\//, '').replace(/^index\.docker\.io\/library\//, '');
  const lastSlash = r.lastIndexOf('/');
  if (!r.includes('@') && !r.slice(lastSlash + 1).includes(':')) r += ':latest';
  return r;
}

export function findSubstitute(map: BaseImageMap, image: string): string | undefined {
  const ref = normalizeImageRef(image);
  return map.substitutions.find((s) => s.regex.test(ref) || s.regex.test(image))?.image;
}

export async function imageExists(conn: DockerConnection, image: string): Promise<boolean> {
  try {
    await conn.docker.getImage(image).inspect();
    return true;
  } catch {
    return false;
  }
}

const pullable = new Map<string, Promise<boolean>>();

/** Asks the registry for the manifest (no download). Fails fast when no registry is reachable. */
export function registryHas(conn: DockerConnection, image: string, timeoutMs: number): Promise<boolean> {
  let p = pullable.get(image);
  if (!p) {
    p = Promise.race([
      conn.docker.getImage(image).distribution().then(() => true, () => false),
      new Promise<boolean>((resolve) => setTimeout(() => resolve(false), timeoutMs).unref()),
    ]);
    pullable.set(image, p);
  }
  return p;
}

export async function pullImage(conn: DockerConnection, image: string, onProgress?: (line: string) => void): Promise<boolean> {
  try {
    const stream = await conn.docker.pull(image);
    await new Promise<void>((resolve, reject) => {
      conn.docker.modem.followProgress(stream, (err: Error | null) => (err ? reject(err) : resolve()), (ev: { status?: string; progress?: string; id?: string }) => {
        onProgress?.(`${ev.id ? `${ev.id}: ` : ''}${ev.status ?? ''} ${ev.progress ?? ''}`.trim());
      });
    });
    return true;
  } catch {
    return false;
  }
}

/** Builds a stand-in from its recipe in sandbox/images/ (same hash label as scripts/build-standins.mjs). */
export async function ensureStandin(conn: DockerConnection, map: BaseImageMap, image: string, onProgress?: (line: string) => void): Promise<void> {
  if (await imageExists(conn, image)) return;
  const recipe = map.standins[image];
  if (!recipe) return;
  const dir = join(packageRoot(), 'sandbox', 'images');
  const hash = createHash('sha256').update(readFileSync(join(dir, recipe))).digest('hex').slice(0, 16);
  onProgress?.(`building stand-in ${image} from sandbox/images/${recipe}`);
  // standin/ holds what recipes copy in (wheels, the host's CA bundle), filled by scripts/build-standins.mjs; a recipe works without them.
  const src = existsSync(join(dir, 'standin')) ? [recipe, 'standin'] : [recipe];
  const stream = await conn.docker.buildImage({ context: dir, src }, { t: image, dockerfile: recipe, labels: { 'tbrl.recipe': hash } });
  const log: string[] = [];
  await new Promise<void>((resolve, reject) => {
    conn.docker.modem.followProgress(stream, (err: Error | null) => (err ? reject(err) : resolve()), (ev: { stream?: string; error?: string }) => {
      if (ev.error) reject(new ImageBuildError(`stand-in ${image}`, [...log.slice(-20), ev.error].join('\n')));
      for (const line of (ev.stream ?? '').split('\n').filter(Boolean)) {
        log.push(line);
        onProgress?.(line);
      }
    });
  });
}

export interface BaseImageDecision {
  image: string;
  substitutedFrom?: string;
}

/**
 * Decides what to run for `image`: itself when present locally (or pullable), else its stand-in.
 * Returns undefined when it is neither present, pullable nor mapped. With `pull`, a pullable image
 * is pulled (containers need it locally; `docker build` pulls FROM images itself).
 */
export async function resolveBaseImage(
  conn: DockerConnection,
  image: string,
  map: BaseImageMap,
  options: BaseImageMapOptions,
  onProgress?: (line: string) => void,
  pull = true,
): Promise<BaseImageDecision | undefined> {
  if (await imageExists(conn, image)) return { image };
  const mode = options.substitute ?? 'auto';
  const standin = mode === 'never' ? undefined : findSubstitute(map, image);
  const timeout = options.registryTimeoutMs ?? 5000;
  if (standin && standin !== image && (mode === 'always' || !(await registryHas(conn, image, timeout)))) {
    await ensureStandin(conn, map, standin, onProgress);
    if (await imageExists(conn, standin)) {
      onProgress?.(`substituting ${image} -> ${standin} (not available locally or from a registry)`);
      return { image: standin, substitutedFrom: image };
    }
  }
  if (!pull) return (await registryHas(conn, image, timeout)) ? { image } : undefined;
  return (await pullImage(conn, image, onProgress)) ? { image } : undefined;
}
