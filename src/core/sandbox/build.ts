import { existsSync, readFileSync, statSync } from 'node:fs';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import type { SandboxSpec } from './types';
import type { DockerConnection } from './docker-client';
import { mapDockerError } from './docker-client';
import { ImageBuildError } from './errors';
import { TbrlError } from '../errors';
import { collectContext, contextHash, packContext } from './build-context';
import { findFromLines, rewriteFrom } from './dockerfile-from';
import { imageExists, loadBaseImageMap, resolveBaseImage, type BaseImageMapOptions } from './base-images';

export const LABEL_KIND = 'dev.tbrl.kind';
const LABEL_HASH = 'dev.tbrl.context-hash';
const LOG_TAIL_LINES = 25;

export interface BuiltImage {
  image: string;
  /** Base images replaced by stand-ins, `a, b` when several stages were. */
  substitutedFrom?: string;
  cached: boolean;
}

/**
 * Builds a task's Dockerfile into `tbrl-task/<hash>`, where the hash covers the context files, the
 * (substituted) Dockerfile and the build args: a re-run with nothing changed reuses the image.
 */
export async function buildTaskImage(
  conn: DockerConnection,
  source: { context: string; dockerfile: string; buildArgs?: Record<string, string> },
  options: BaseImageMapOptions,
  spec: Pick<SandboxSpec, 'onProgress' | 'signal'>,
): Promise<BuiltImage> {
  const context = resolve(source.context);
  if (!existsSync(context) || !statSync(context).isDirectory()) {
    throw new TbrlError('BUILD_CONTEXT_MISSING', `Build context ${context} is not a directory.`, 'point the task at the folder holding its Dockerfile, e.g. tasks/hello-world/.');
  }
  const dockerfilePath = isAbsolute(source.dockerfile) ? source.dockerfile : join(context, source.dockerfile);
  if (!existsSync(dockerfilePath)) {
    throw new TbrlError('DOCKERFILE_MISSING', `Dockerfile ${dockerfilePath} does not exist.`, `create it or name the right file relative to ${context}, e.g. "dockerfile": "Dockerfile".`);
  }
  const onProgress = spec.onProgress;
  let dockerfile = readFileSync(dockerfilePath, 'utf8');
  const args = source.buildArgs ?? {};
  const map = loadBaseImageMap(options);
  const substituted: string[] = [];
  for (const from of findFromLines(dockerfile, args).reverse()) {
    if (from.stageRef || !from.image) continue;
    const decision = await resolveBaseImage(conn, from.image, map, options, onProgress, false);
    if (decision?.substitutedFrom) {
      dockerfile = rewriteFrom(dockerfile, from, decision.image);
      substituted.unshift(from.image);
    }
  }

  // A Dockerfile outside the context travels inside the tar under a private name.
  const relDockerfile = relative(context, dockerfilePath).split(sep).join('/');
  const inContext = !relDockerfile.startsWith('..');
  const dockerfileName = inContext ? relDockerfile : '.tbrl.Dockerfile';
  const files = collectContext(context).filter((f) => f.path !== dockerfileName);
  files.push({ path: dockerfileName, mode: 0o644, kind: 'file', content: Buffer.from(dockerfile) });
  const hash = await contextHash(files, JSON.stringify({ dockerfileName, args: Object.entries(args).sort() }));
  const image = `tbrl-task/${hash.slice(0, 20)}:latest`;
  const substitutedFrom = substituted.length ? substituted.join(', ') : undefined;
  if (await imageExists(conn, image)) {
    onProgress?.(`using cached image ${image}`);
    return { image, substitutedFrom, cached: true };
  }

  onProgress?.(`building ${image} from ${dockerfilePath}${substitutedFrom ? ` (substituted ${substitutedFrom})` : ''}`);
  const tar = packContext(files);
  let stream: NodeJS.ReadableStream;
  try {
    stream = await conn.docker.buildImage(tar as unknown as NodeJS.ReadableStream, {
      t: image,
      dockerfile: dockerfileName,
      buildargs: args,
      labels: { [LABEL_KIND]: 'task-image', [LABEL_HASH]: hash },
      rm: true,
      forcerm: true,
      abortSignal: spec.signal,
    });
  } catch (err) {
    throw mapDockerError(err, 'starting an image build', { target: conn.target, connected: true });
  }
  const log: string[] = [];
  let step: string | undefined;
  let failure: string | undefined;
  await new Promise<void>((resolveBuild, reject) => {
    conn.docker.modem.followProgress(
      stream,
      (err: Error | null) => (err ? reject(err) : resolveBuild()),
      (ev: { stream?: string; status?: string; error?: string; errorDetail?: { message?: string } }) => {
        if (ev.error || ev.errorDetail) failure = ev.errorDetail?.message ?? ev.error;
        for (const line of (ev.stream ?? ev.status ?? '').split('\n').map((l) => l.trimEnd()).filter(Boolean)) {
          // The classic builder announces each instruction as "Step N/M : INSTRUCTION".
          if (/^Step \d+\/\d+ : /.test(line)) step = line;
          log.push(line);
          if (log.length > 200) log.shift();
          onProgress?.(line);
        }
      },
    );
  }).catch((err) => {
    failure ??= (err as Error).message;
  });
  if (failure !== undefined) {
    const mapped = mapDockerError(new Error(failure), 'building the task image', { target: conn.target, connected: true });
    if (mapped instanceof TbrlError) throw mapped;
    throw new ImageBuildError(step, [...log.slice(-LOG_TAIL_LINES), failure].join('\n'));
  }
  return { image, substitutedFrom, cached: false };
}
