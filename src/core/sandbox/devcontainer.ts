import { resolve } from 'node:path';
import type { DockerConnection } from './docker-client';
import type { ImageResolverOptions, ResolvedImage } from './images';
import type { SandboxSpec } from './types';
import { TbrlError } from '../errors';
import { ImageMissingError } from './errors';
import { buildTaskImage } from './build';
import { loadBaseImageMap, resolveBaseImage } from './base-images';
import { copyWorkspaceIn } from './workspace';
import { findDevcontainerConfig, parseDevcontainer } from './devcontainer-config';

/**
 * A sandbox described by a workspace's devcontainer.json. The workspace is copied in by default so
 * the agent never writes the user's files; binding it is opt-in (spec.workspace.mode = 'bind').
 */
export async function resolveDevcontainer(
  conn: DockerConnection,
  source: { workspaceFolder: string; configPath?: string; allowPrivileges?: string[] },
  options: ImageResolverOptions,
  spec: SandboxSpec,
): Promise<ResolvedImage> {
  const hostPath = resolve(source.workspaceFolder);
  const config = parseDevcontainer(hostPath, findDevcontainerConfig(hostPath, source.configPath), { allowPrivileges: source.allowPrivileges });
  let image: string;
  let substitutedFrom: string | undefined;
  if (config.build) {
    const built = await buildTaskImage(conn, { context: config.build.context, dockerfile: config.build.dockerfile, buildArgs: config.build.args }, options, spec);
    image = built.image;
    substitutedFrom = built.substitutedFrom;
  } else {
    const decided = await resolveBaseImage(conn, config.image!, loadBaseImageMap(options), options, spec.onProgress);
    if (!decided) throw new ImageMissingError(config.image!);
    image = decided.image;
    substitutedFrom = decided.substitutedFrom;
  }
  const mode = spec.workspace?.mode ?? 'copy';
  const containerPath = spec.workspace?.containerPath ?? config.workspaceFolder;
  const workspace = { hostPath: spec.workspace?.hostPath ?? hostPath, containerPath, mode };
  return {
    image,
    substitutedFrom,
    workspace,
    mounts: config.mounts.length ? config.mounts : undefined,
    env: config.containerEnv,
    ...(Object.keys(config.hostConfig).length ? { hostConfig: config.hostConfig } : {}),
    workdir: containerPath,
    afterStart: async (sandbox) => {
      if (mode === 'copy') await copyWorkspaceIn(sandbox, workspace.hostPath, containerPath);
      for (const step of config.lifecycle) {
        spec.onProgress?.(`running ${step.name}`);
        const r = Array.isArray(step.command)
          ? await sandbox.execArgv(step.command, { cwd: containerPath, timeoutMs: 30 * 60_000, maxOutputBytes: 16 * 1024 })
          : await sandbox.exec(step.command, { timeoutMs: 30 * 60_000, maxOutputBytes: 16 * 1024 });
        spec.onProgress?.(r.output);
        if (r.exitCode !== 0) {
          throw new TbrlError(
            'DEVCONTAINER_LIFECYCLE_FAILED',
            `${step.name} in ${config.configPath} failed with exit code ${r.exitCode}${r.timedOut ? ' (timed out)' : ''}:\n${r.output.split('\n').slice(-20).join('\n')}`,
            `fix the command in devcontainer.json (it runs in ${containerPath}).`,
          );
        }
      }
    },
  };
}
