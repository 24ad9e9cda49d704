import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

export const RAY_SH = join(__dirname, '..', '..', 'scripts', 'ray.sh');

/** The dashboard (Jobs API) of the studio's head as scripts/ray.sh starts it: its ports follow TBRL_RAY_PORT_BASE / TBRL_RAY_DASHBOARD_PORT. */
export function rayDashboardUrl(env: NodeJS.ProcessEnv = process.env): string {
  return execFileSync('bash', [RAY_SH, 'url'], { encoding: 'utf8', env }).trim();
}

export const RAY_DASHBOARD_URL = rayDashboardUrl();
export const RAY_DASHBOARD_PORT = Number(new URL(RAY_DASHBOARD_URL).port);
