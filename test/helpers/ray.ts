import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { RayJobsClient } from '../../src/core/trainer/jobs';

export const RAY_SH = join(__dirname, '..', '..', 'scripts', 'ray.sh');

/** The dashboard (Jobs API) of the studio's head as scripts/ray.sh starts it: its ports follow TBRL_RAY_PORT_BASE / TBRL_RAY_DASHBOARD_PORT. */
export function rayDashboardUrl(env: NodeJS.ProcessEnv = process.env): string {
  return execFileSync('bash', [RAY_SH, 'url'], { encoding: 'utf8', env }).trim();
}

export const RAY_DASHBOARD_URL = rayDashboardUrl();
export const RAY_DASHBOARD_PORT = Number(new URL(RAY_DASHBOARD_URL).port);

function rayScript(cmd: 'start' | 'stop' | 'status'): number {
  return spawnSync('bash', [RAY_SH, cmd], { stdio: cmd === 'status' ? 'ignore' : 'inherit' }).status ?? 1;
}

/**
 * The studio's Ray head as one test file uses it. scripts/test.mjs starts a head for the whole run;
 * a file run alone starts its own in `start()` and stops it again in `stop()`. Every job recorded in
 * `submitted` is stopped, awaited and deleted by `stop()`, so no job outlives its file.
 */
export class RayHeadForFile {
  readonly client: RayJobsClient;
  readonly submitted: string[] = [];
  private startedHere = false;

  constructor(url: string = RAY_DASHBOARD_URL) {
    this.client = new RayJobsClient({ url });
  }

  start(): void {
    if (rayScript('status') === 0) return;
    this.startedHere = true;
    assert.equal(rayScript('start'), 0, 'scripts/ray.sh start');
  }

  track(submissionId: string): void {
    if (submissionId && !this.submitted.includes(submissionId)) this.submitted.push(submissionId);
  }

  async stop(): Promise<void> {
    for (const id of this.submitted) {
      await this.client.stop(id).catch(() => undefined);
      await this.client.wait(id, { timeoutMs: 60_000 }).catch(() => undefined);
      await this.client.delete(id).catch(() => undefined);
    }
    if (this.startedHere) rayScript('stop');
  }
}
