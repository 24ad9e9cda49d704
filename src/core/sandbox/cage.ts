import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type Docker from 'dockerode';
import { packageRoot } from './package-root';
import { singleFileTar } from './archive';
import { LABEL_CAGE } from './gc';

/**
 * Where the studio's own programs appear in every sandbox container: a named volume mounted
 * read-only, so root in the container cannot replace them (remounting needs CAP_SYS_ADMIN, which
 * Docker drops). The frame shell (shell.ts) recognises it in /proc/self/mountinfo, which the
 * agent cannot forge, and then executes nothing of the image while it holds the frame nonce.
 */
export const CAGE_DIR = '/.tbrl-cage';

/**
 * The helper's files: `cage` (sandbox/cage/cage.c, static: it loads nothing from the image) and
 * `bash` (a static bash, the frame shell itself, so a frame shell started after the agent
 * replaced the image's bash or libc is still ours). `missing` says what could not be had here.
 */
export interface CageAssets {
  files: { name: string; content: Buffer }[];
  digest: string;
  missing: string[];
}

/** How the agent's commands are kept from the frame shell, for the run header. */
export interface CageInfo {
  /** `helper`: the studio's static helper on a read-only mount; `none`: not mounted (see note). */
  mode: 'helper' | 'none';
  /** Why the helper is absent or partial (never silent). */
  note?: string;
}

/**
 * Execute-only (0111): a non-root frame shell started from a file it cannot read is marked
 * non-dumpable by the kernel, so same-uid commands are refused its memory, environment and fds.
 */
const VOLUME_LAYOUT = 'cage,bash mode 0111; .ready last';
const STATIC_BASH = ['/bin/bash-static', '/usr/bin/bash-static'];

function cacheRoot(): string {
  return process.env.TBRL_CACHE_DIR ?? join(homedir(), '.cache', 'tbrl');
}

let assets: CageAssets | undefined;

/**
 * Builds `cage` once per source digest (`gcc -static -O2`, cached under ~/.cache/tbrl/cage) and
 * finds the static bash (Debian's bash-static, installed by scripts/setup.sh).
 */
export function cageAssets(): CageAssets {
  if (assets) return assets;
  const files: { name: string; content: Buffer }[] = [];
  const missing: string[] = [];
  const source = join(packageRoot(), 'sandbox', 'cage', 'cage.c');
  if (!existsSync(source)) {
    missing.push(`the helper's source ${source} is not in this installation`);
  } else {
    const text = readFileSync(source);
    const dir = join(cacheRoot(), 'cage', createHash('sha256').update(text).digest('hex').slice(0, 16));
    const binary = join(dir, 'cage');
    if (!existsSync(binary)) {
      try {
        mkdirSync(dir, { recursive: true });
        const tmp = `${binary}.${process.pid}`;
        execFileSync(process.env.CC ?? 'gcc', ['-static', '-O2', '-s', '-o', tmp, source], { stdio: ['ignore', 'ignore', 'pipe'] });
        renameSync(tmp, binary);
      } catch (err) {
        const why = ((err as { stderr?: Buffer }).stderr?.toString() || (err as Error).message).split('\n')[0];
        missing.push(`the helper could not be built (gcc -static: ${why}); install gcc and the static libc (scripts/setup.sh does)`);
      }
    }
    if (existsSync(binary)) files.push({ name: 'cage', content: readFileSync(binary) });
  }
  const bash = STATIC_BASH.find((p) => existsSync(p));
  if (bash) files.push({ name: 'bash', content: readFileSync(bash) });
  else missing.push('no static bash here (apt-get install bash-static): the frame shell is the image\'s bash, which the agent can replace before the shell is restarted');
  // The layout (names, modes) is part of the volume's identity.
  const digest = createHash('sha256').update(VOLUME_LAYOUT);
  for (const f of files) digest.update(f.name).update(f.content);
  assets = { files, digest: digest.digest('hex').slice(0, 16), missing };
  return assets;
}

const volumes = new WeakMap<Docker, Map<string, Promise<string>>>();

/**
 * The read-only mount of the helper for a container created from `image`: a named volume per
 * helper digest, filled once (through a created, never started container of `image`, which works
 * with remote daemons too) and checked by its `.ready` file, written last.
 */
export async function cageMount(docker: Docker, image: string): Promise<{ mount?: Docker.MountSettings; info: CageInfo }> {
  // For demonstrations and tests of the weaker mode; the run header says it was off.
  if (process.env.TBRL_CAGE === 'off') return { info: { mode: 'none', note: "the studio's cage was turned off (TBRL_CAGE=off)" } };
  const a = cageAssets();
  if (!a.files.some((f) => f.name === 'cage')) return { info: { mode: 'none', note: `commands run without the studio's cage: ${a.missing.join('; ')}` } };
  let byDocker = volumes.get(docker);
  if (!byDocker) volumes.set(docker, (byDocker = new Map()));
  const name = `tbrl-cage-${a.digest}`;
  let ready = byDocker.get(name);
  if (!ready) {
    // Once per daemon and process: the architecture check, then the volume.
    ready = (async () => {
      const arch = await docker.info().then((i: { Architecture?: string }) => i.Architecture, () => undefined);
      if (arch && !sameArch(arch)) throw new Error(`the Docker daemon runs ${arch} and the helper is built for ${process.arch}`);
      return fillVolume(docker, name, image, a).catch((err: Error) => {
        throw new Error(`its volume ${name} could not be filled (${err.message.split('\n')[0]})`);
      });
    })();
    byDocker.set(name, ready);
    ready.catch(() => byDocker!.delete(name));
  }
  try {
    await ready;
  } catch (err) {
    return { info: { mode: 'none', note: `commands run without the studio's cage: ${(err as Error).message}` } };
  }
  const note = a.missing.length ? a.missing.join('; ') : undefined;
  return {
    mount: { Type: 'volume', Source: name, Target: CAGE_DIR, ReadOnly: true, VolumeOptions: { NoCopy: true } } as Docker.MountSettings,
    info: { mode: 'helper', ...(note ? { note } : {}) },
  };
}

function sameArch(dockerArch: string): boolean {
  const map: Record<string, string[]> = { x64: ['x86_64', 'amd64'], arm64: ['aarch64', 'arm64'] };
  return (map[process.arch] ?? [process.arch]).includes(dockerArch);
}

async function fillVolume(docker: Docker, name: string, image: string, a: CageAssets): Promise<string> {
  await docker.createVolume({ Name: name, Labels: { [LABEL_CAGE]: a.digest } });
  const filler = await docker.createContainer({
    Image: image,
    Entrypoint: ['/.tbrl-never-started'],
    Labels: { [LABEL_CAGE]: a.digest },
    NetworkDisabled: true,
    HostConfig: { Mounts: [{ Type: 'volume', Source: name, Target: '/cage', VolumeOptions: { NoCopy: true } } as Docker.MountSettings] },
  });
  try {
    const present = await filler.getArchive({ path: '/cage/.ready' }).then((s) => { (s as unknown as { resume(): void }).resume(); return true; }, () => false);
    if (!present) {
      for (const f of a.files) await filler.putArchive(await singleFileTar(f.name, f.content, 0o111), { path: '/cage' });
      await filler.putArchive(await singleFileTar('.ready', Buffer.from(`${a.digest}\n`), 0o444), { path: '/cage' });
    }
  } finally {
    await filler.remove({ force: true, v: false }).catch(() => undefined);
  }
  return name;
}
