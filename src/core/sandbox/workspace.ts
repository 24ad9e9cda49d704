import type { DockerSandbox } from './docker-sandbox';
import { collectContext, packContext } from './build-context';

/** Copies the host workspace into the container (copy mode: the user's files are never written). */
export async function copyWorkspaceIn(sandbox: DockerSandbox, hostPath: string, containerPath: string): Promise<void> {
  const files = collectContext(hostPath, { ignore: () => false });
  const mk = await sandbox.execArgv(['mkdir', '-p', containerPath], { timeoutMs: 30_000 });
  if (mk.exitCode !== 0) throw new Error(`could not create ${containerPath} in the sandbox: ${mk.output}`);
  await sandbox.putArchive(await packContext(files), containerPath);
}
