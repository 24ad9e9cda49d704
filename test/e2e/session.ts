import { cpSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
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
