import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { CodeServer, VSIX, launchChromium } from './code-server';
import { Workbench } from './pages/workbench';

/** Where replay workspaces keep the recorded oracle run of examples/hello-world. */
export const REPLAY_RUN = 'runs/hello-world-oracle';

/**
 * A workspace holding the example task, the recorded oracle run (or `trajectory`, a variant of
 * it) and a launch configuration that replays the run and breaks at the step mentioning wordfreq.
 */
export function replayWorkspace(prefix: string, trajectory?: string): string {
  const workspace = mkdtempSync(join(tmpdir(), prefix));
  cpSync('examples/hello-world', join(workspace, 'examples/hello-world'), { recursive: true });
  if (trajectory === undefined) {
    cpSync('test/e2e/fixtures/hello-world-oracle', join(workspace, REPLAY_RUN), { recursive: true });
  } else {
    mkdirSync(join(workspace, REPLAY_RUN), { recursive: true });
    writeFileSync(join(workspace, REPLAY_RUN, 'trajectory.jsonl'), trajectory);
  }
  mkdirSync(join(workspace, '.vscode'));
  writeFileSync(join(workspace, '.vscode/launch.json'), JSON.stringify({
    version: '0.2.0',
    configurations: [{ type: 'tbrl', request: 'launch', name: 'Replay hello-world', trajectory: `\${workspaceFolder}/${REPLAY_RUN}/trajectory.jsonl`, stopOnEntry: false, breakOn: ['/wordfreq/'] }],
  }, null, 2));
  return workspace;
}

export interface WorkbenchSession {
  server: CodeServer;
  browser: Browser;
  page: Page;
  wb: Workbench;
}

/** code-server with the packaged extension serving `workspace`, and Chromium showing its workbench. */
export async function openWorkbench(workspace: string): Promise<WorkbenchSession> {
  const server = new CodeServer(VSIX);
  let browser: Browser | undefined;
  try {
    const url = await server.start(workspace);
    browser = await launchChromium();
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    const wb = new Workbench(page);
    await wb.open(url);
    return { server, browser, page, wb };
  } catch (err) {
    // The caller has nothing to close yet, so a half-started session must not outlive the failure.
    await browser?.close().catch(() => undefined);
    await server.stop().catch(() => undefined);
    throw err;
  }
}

/**
 * Safety net for runs a failed test abandoned: removes the containers of the given runs. Containers
 * carry the run id (the trajectory header's), not the run directory's name, as their label.
 */
export function removeRunContainers(runIds: readonly string[]): void {
  for (const runId of runIds) {
    const ids = spawnSync('docker', ['ps', '-aq', '--filter', `label=dev.tbrl.run=${runId}`], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean);
    if (ids.length) spawnSync('docker', ['rm', '-f', ...ids]);
  }
}

/** The run ids of the trajectories under `runsDir` (from each header; unreadable ones are skipped). */
export function runIdsIn(runsDir: string): string[] {
  if (!existsSync(runsDir)) return [];
  return readdirSync(runsDir).flatMap((d) => {
    try {
      const header = JSON.parse(readFileSync(join(runsDir, d, 'trajectory.jsonl'), 'utf8').split('\n')[0]) as { runId?: unknown };
      return typeof header.runId === 'string' ? [header.runId] : [];
    } catch {
      return [];
    }
  });
}

/** For an afterEach hook: a screenshot named after the test that just failed. */
export async function screenshotIfFailed(t: unknown, wb: Workbench | undefined, prefix = 'failed'): Promise<void> {
  const test = t as { passed?: boolean; name: string };
  if (wb && test.passed === false) await wb.screenshot(`${prefix}-${test.name.slice(0, 40).replace(/[^a-z0-9]+/gi, '-')}`);
}

