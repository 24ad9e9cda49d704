import type Docker from 'dockerode';
import type { SandboxSpec } from './types';
import type { DockerConnection } from './docker-client';
import type { DockerSandbox } from './docker-sandbox';
import { ImageMissingError } from './errors';
import { buildTaskImage } from './build';
import { resolveDevcontainer } from './devcontainer';
import { copyWorkspaceIn } from './workspace';
import { loadBaseImageMap, resolveBaseImage, type BaseImageMapOptions } from './base-images';

export type ImageResolverOptions = BaseImageMapOptions;

export interface ResolvedImage {
  image: string;
  substitutedFrom?: string;
  workspace?: { hostPath: string; containerPath: string; mode: 'copy' | 'bind' };
  mounts?: Docker.MountSettings[];
  env?: Record<string, string>;
  /** Docker settings a trusted devcontainer asked for and the user allowed by name. */
  hostConfig?: { Privileged?: boolean; CapAdd?: string[]; SecurityOpt?: string[] };
  workdir?: string;
  /** Work that needs the running sandbox (workspace copy, postCreateCommand). */
  afterStart?: (sandbox: DockerSandbox) => Promise<void>;
}

export async function resolveImage(conn: DockerConnection, spec: SandboxSpec, options: ImageResolverOptions): Promise<ResolvedImage> {
  const source = spec.image;
  switch (source.kind) {
    case 'image': {
      const map = loadBaseImageMap(options);
      const r = await resolveBaseImage(conn, source.image, map, options, spec.onProgress);
      if (!r) throw new ImageMissingError(source.image);
      return { image: r.image, substitutedFrom: r.substitutedFrom, workspace: spec.workspace, ...workspaceLaunch(spec) };
    }
    case 'dockerfile': {
      const built = await buildTaskImage(conn, source, options, spec);
      return { image: built.image, substitutedFrom: built.substitutedFrom, workspace: spec.workspace, ...workspaceLaunch(spec) };
    }
    case 'devcontainer': {
      return resolveDevcontainer(conn, source, options, spec);
    }
  }
}

/** A workspace given directly in the spec (not via devcontainer): copy after start, or bind. */
function workspaceLaunch(spec: SandboxSpec): Pick<ResolvedImage, 'afterStart'> {
  const ws = spec.workspace;
  if (!ws || ws.mode === 'bind') return {};
  return {
    afterStart: async (sandbox) => {
      await copyWorkspaceIn(sandbox, ws.hostPath, ws.containerPath);
    },
  };
}
