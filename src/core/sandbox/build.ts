import { existsSync, readFileSync, statSync } from 'node:fs';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import type { SandboxSpec } from './types';
import type { DockerConnection } from './docker-client';
import { mapDockerError } from './docker-client';
import { BaseImageUnavailableError, ImageBuildError } from './errors';
import { TbrlError } from '../errors';
import { collectContext, contextHash, packContext } from './build-context';
import { findFromLines, rewriteFrom } from './dockerfile-from';
import { imageExists, loadBaseImageMap, resolveBaseImage, type BaseImageMapOptions } from './base-images';
import { HEREDOC_DIR, rewriteHeredocs } from './dockerfile-heredoc';
import { BuildkitProgress, decodeBuildkitStatus } from './buildkit-trace';

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
  const original = dockerfile;
  const substituted: string[] = [];
  const standins: string[] = [];
  for (const from of findFromLines(dockerfile, args).reverse()) {
    if (from.stageRef || !from.image) continue;
    const decision = await resolveBaseImage(conn, from.image, map, options, onProgress, false);
    if (!decision) throw new BaseImageUnavailableError(from.image, `line ${from.line + 1} of ${dockerfilePath}`, options.substitute === 'never');
    if (decision.substitutedFrom) {
      dockerfile = rewriteFrom(dockerfile, from, decision.image);
      substituted.unshift(from.image);
      standins.unshift(`${from.image} -> ${decision.image}`);
    }
  }
  const heredocs = rewriteHeredocs(dockerfile);
  dockerfile = heredocs.dockerfile;
  if (heredocs.droppedSyntax) onProgress?.(`# syntax=${heredocs.droppedSyntax} ignored: the engine's built-in Dockerfile frontend builds it (its image would come from a registry), with heredocs expanded by tbrl`);

  // A Dockerfile outside the context travels inside the tar under a private name.
  const relDockerfile = relative(context, dockerfilePath).split(sep).join('/');
  const inContext = !relDockerfile.startsWith('..');
  const dockerfileName = inContext ? relDockerfile : '.tbrl.Dockerfile';
  const files = collectContext(context).filter((f) => f.path !== dockerfileName && !f.path.startsWith(HEREDOC_DIR));
  files.push(...heredocs.files, { path: dockerfileName, mode: 0o644, kind: 'file', content: Buffer.from(dockerfile) });
  const hash = await contextHash(files, JSON.stringify({ dockerfileName, args: Object.entries(args).sort() }));
  const image = `tbrl-task/${hash.slice(0, 20)}:latest`;
  const substitutedFrom = substituted.length ? substituted.join(', ') : undefined;
  if (await imageExists(conn, image)) {
    onProgress?.(`using cached image ${image}`);
    return { image, substitutedFrom, cached: true };
  }

  onProgress?.(`building ${image} from ${dockerfilePath}${substitutedFrom ? ` (substituted ${substitutedFrom})` : ''}`);
  // A factory, not a stream: a refused BuildKit build is retried with the legacy builder on a fresh stream.
  const request = { pack: () => packContext(files), image, dockerfileName, args, hash, signal: spec.signal };
  let outcome = await runBuild(conn, { ...request, buildkit: options.builder !== 'legacy' }, onProgress);
  if (outcome.buildkitRefused) {
    onProgress?.(`the engine refused a BuildKit build (${outcome.failure}); building with the legacy builder`);
    outcome = await runBuild(conn, { ...request, buildkit: false }, onProgress);
  }
  if (outcome.failure !== undefined) {
    const mapped = mapDockerError(new Error(outcome.failure), 'building the task image', { target: conn.target, connected: true });
    if (mapped instanceof TbrlError) throw mapped;
    const step = outcome.step ? locateStep(original, dockerfile, outcome.step, dockerfilePath) : undefined;
    throw new ImageBuildError(step, [...outcome.log.slice(-LOG_TAIL_LINES), outcome.failure].join('\n'), undefined, standins.join(', ') || undefined);
  }
  return { image, substitutedFrom, cached: false };
}

interface BuildRequest {
  pack: () => NodeJS.ReadableStream;
  image: string;
  dockerfileName: string;
  args: Record<string, string>;
  hash: string;
  signal?: AbortSignal;
  /** Through the engine's BuildKit (cache mounts, RUN flags) rather than the legacy builder. */
  buildkit: boolean;
}

interface BuildOutcome {
  failure?: string;
  /** The instruction that failed, as the builder names it. */
  step?: string;
  log: string[];
  /** The engine does not do BuildKit builds through its API: retry with the legacy builder. */
  buildkitRefused?: boolean;
}

/**
 * One build through the Engine API. BuildKit (`version: '2'`) is what `docker build` uses since
 * Docker 23 and the only builder that knows `RUN --mount=type=cache`; engines as old as 20.10 run it
 * for an uploaded context without a client session, so no buildx plugin is needed.
 */
async function runBuild(conn: DockerConnection, req: BuildRequest, onProgress?: (line: string) => void): Promise<BuildOutcome> {
  let stream: NodeJS.ReadableStream;
  try {
    stream = await conn.docker.buildImage(req.pack(), {
      t: req.image,
      dockerfile: req.dockerfileName,
      buildargs: req.args,
      labels: { [LABEL_KIND]: 'task-image', [LABEL_HASH]: req.hash },
      rm: true,
      forcerm: true,
      abortSignal: req.signal,
      ...(req.buildkit ? { version: '2' } : {}),
    } as Parameters<typeof conn.docker.buildImage>[1]);
  } catch (err) {
    if (req.buildkit && isBuildkitRefusal(err)) return { buildkitRefused: true, failure: daemonText(err), log: [] };
    throw mapDockerError(err, 'starting an image build', { target: conn.target, connected: true });
  }
  const log: string[] = [];
  const note = (line: string) => {
    log.push(line);
    if (log.length > 200) log.shift();
    onProgress?.(line);
  };
  const buildkit = new BuildkitProgress(note);
  let step: string | undefined;
  let failure: string | undefined;
  await new Promise<void>((resolveBuild, reject) => {
    conn.docker.modem.followProgress(
      stream,
      (err: Error | null) => (err ? reject(err) : resolveBuild()),
      (ev: { id?: string; aux?: unknown; stream?: string; status?: string; error?: string; errorDetail?: { message?: string } }) => {
        if (ev.error || ev.errorDetail) failure = ev.errorDetail?.message ?? ev.error;
        if (ev.id === 'moby.buildkit.trace' && typeof ev.aux === 'string') {
          const status = decodeBuildkitStatus(ev.aux);
          if (status) buildkit.push(status);
          return;
        }
        for (const line of (ev.stream ?? ev.status ?? '').split('\n').map((l) => l.trimEnd()).filter(Boolean)) {
          // The classic builder announces each instruction as "Step N/M : INSTRUCTION".
          if (/^Step \d+\/\d+ : /.test(line)) step = line.replace(/^Step \d+\/\d+ : /, '');
          note(line);
        }
      },
    );
  }).catch((err) => {
    failure ??= (err as Error).message;
  });
  if (failure !== undefined && buildkit.failed) {
    // BuildKit names the failing vertex "[stage-0 3/4] RUN …"; its own log is the useful tail.
    step = buildkit.failed.name.replace(/^\[[^\]]*\]\s*/, '');
    const own = buildkit.failedLog();
    return { failure, step, log: own.length ? own : log };
  }
  return { failure, step, log };
}

function daemonText(err: unknown): string {
  const e = err as { json?: { message?: string }; message?: string };
  return e?.json?.message ?? e?.message ?? String(err);
}

function isBuildkitRefusal(err: unknown): boolean {
  return /buildkit|version 2|unsupported builder|session/i.test(daemonText(err));
}

/**
 * `line N of <Dockerfile>: <instruction as the author wrote it>` for the instruction the builder
 * names. The builder saw the rewritten file (stand-in FROMs, expanded heredocs), which keeps every
 * line in place: the match is made there and the author's line is shown.
 */
export function locateStep(original: string, sent: string, step: string, path: string): string {
  const squash = (t: string) => t.replace(/\s+/g, ' ').trim();
  const wanted = squash(step);
  const sentLines = sent.split('\n');
  const originalLines = original.split('\n');
  for (let i = 0; i < sentLines.length; i++) {
    // An instruction can span continuation lines: compare what it says, not its layout.
    let text = sentLines[i];
    for (let k = i; /\\\s*$/.test(sentLines[k] ?? '') && k + 1 < sentLines.length; k++) text = `${text.replace(/\\\s*$/, ' ')}${sentLines[k + 1]}`;
    const have = squash(text);
    if (have && !have.startsWith('#') && (wanted.startsWith(have.slice(0, 80)) || have.startsWith(wanted.slice(0, 80)))) {
      return `line ${i + 1} of ${path}: ${squash(originalLines[i] ?? text).slice(0, 200)}`;
    }
  }
  return wanted.slice(0, 200);
}
