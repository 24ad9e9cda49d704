export * from './types';
export * from './errors';
export { DockerSandbox, LABEL_KIND, LABEL_STEP } from './docker-sandbox';
export { DockerSandboxProvider, createDockerProvider, PROJECT_LABEL_VALUE, type DockerProviderOptions } from './provider';
export { processAlive } from './gc';
export { loadBaseImageMap, findSubstitute, normalizeImageRef } from './base-images';
export { buildTaskImage } from './build';
export { workspacePatch, copyWorkspaceIn } from './workspace';
export { parseDevcontainer, findDevcontainerConfig, type DevcontainerConfig } from './devcontainer-config';
