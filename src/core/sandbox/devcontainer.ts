import type { DockerConnection } from './docker-client';
import type { ImageResolverOptions, ResolvedImage } from './images';
import type { SandboxSpec } from './types';
import { TbrlError } from '../errors';

export async function resolveDevcontainer(
  _conn: DockerConnection,
  _source: { workspaceFolder: string; configPath?: string },
  _options: ImageResolverOptions,
  _spec: SandboxSpec,
): Promise<ResolvedImage> {
  throw new TbrlError('NOT_READY', 'devcontainer sandboxes are being built', 'use a Dockerfile or image for now');
}
