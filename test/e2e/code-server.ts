import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';

/**
 * A real VS Code (code-server, installed by scripts/setup.sh) with the packaged extension
 * installed into a fresh extensions dir and a fresh user-data dir, serving one workspace folder.
 */
export const CODE_SERVER = process.env.TBRL_CODE_SERVER ?? join(process.env.TBRL_CODE_SERVER_DIR ?? join(homedir(), '.cache/tbrl/code-server'), 'node_modules/.bin/code-server');
export const CHROMIUM = process.env.TBRL_CHROMIUM ?? '/usr/bin/chromium';

/** The package under test, as `npm run package` writes it. */
export const VSIX = join(process.cwd(), 'dist', 'tbrl-studio.vsix');

/**
 * Packages the extension unless this test run already did: scripts/test.mjs packages once before
 * the e2e files and sets TBRL_E2E_REPACKAGE=0, so each file does not spend half a minute on it;
 * a file run on its own packages the current sources.
 */
export function ensureVsix(): void {
  if (existsSync(VSIX) && process.env.TBRL_E2E_REPACKAGE === '0') return;
  const pkg = spawnSync('npm', ['run', '-s', 'package'], { encoding: 'utf8', timeout: 180_000 });
  if (pkg.status !== 0) throw new Error(`npm run package failed:\n${pkg.stdout}\n${pkg.stderr}`);
}

/** Debian's Chromium with the flags this closed network needs (see ../shared/RECIPES.md). */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'] });
}

export function requireTools(): void {
  for (const [what, path] of [['code-server', CODE_SERVER], ['chromium', CHROMIUM]]) {
    if (!existsSync(path)) throw new Error(`${what} not found at ${path}: run scripts/setup.sh (it installs code-server 4.100.3 and Chromium), or set TBRL_CODE_SERVER / TBRL_CHROMIUM.`);
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

export class CodeServer {
  readonly root = mkdtempSync(join(tmpdir(), 'tbrl-e2e-cs-'));
  private proc?: ChildProcess;
  port = 0;
  log = '';

  constructor(private readonly vsix: string) {}

  async start(folder: string): Promise<string> {
    const userData = join(this.root, 'user-data');
    const extensions = join(this.root, 'extensions');
    mkdirSync(join(userData, 'User'), { recursive: true });
    writeFileSync(join(userData, 'User', 'settings.json'), JSON.stringify({
      'workbench.startupEditor': 'none',
      'security.workspace.trust.enabled': false,
      'workbench.tips.enabled': false,
      'telemetry.telemetryLevel': 'off',
      'extensions.ignoreRecommendations': true,
      'workbench.welcomePage.walkthroughs.openOnInstall': false,
      'debug.openDebug': 'openOnDebugBreak',
      'window.commandCenter': false,
      'chat.commandCenter.enabled': false,
      'workbench.secondarySideBar.defaultVisibility': 'hidden',
    }, null, 2));
    const install = spawnSync(CODE_SERVER, ['--user-data-dir', userData, '--extensions-dir', extensions, '--install-extension', this.vsix], { encoding: 'utf8', timeout: 60_000 });
    if (install.status !== 0 || !/successfully installed/.test(install.stdout)) throw new Error(`installing ${this.vsix} into code-server failed:\n${install.stdout}\n${install.stderr}`);
    this.port = await freePort();
    this.proc = spawn(CODE_SERVER, ['--auth', 'none', '--bind-addr', `127.0.0.1:${this.port}`, '--disable-telemetry', '--disable-update-check', '--disable-workspace-trust', '--user-data-dir', userData, '--extensions-dir', extensions, folder], {
      stdio: ['ignore', 'pipe', 'pipe'],
      // The editor serves the cached local model when no endpoint is set; these tests drive the oracle
      // (fast, deterministic), so the model cache is pointed where no model is, as on a machine without one.
      env: { ...process.env, HOME: process.env.HOME, TBRL_MODEL_DIR: '/nonexistent/tbrl-e2e-models' },
      detached: false,
    });
    this.proc.stdout!.on('data', (d) => (this.log += d));
    this.proc.stderr!.on('data', (d) => (this.log += d));
    const url = `http://127.0.0.1:${this.port}/?folder=${encodeURIComponent(folder)}`;
    for (let i = 0; i < 120; i++) {
      try {
        const r = await fetch(`http://127.0.0.1:${this.port}/healthz`);
        if (r.ok) return url;
      } catch {
        // not listening yet
      }
      if (this.proc.exitCode !== null) throw new Error(`code-server exited (${this.proc.exitCode}):\n${this.log}`);
      await new Promise((r) => setTimeout(r, 250));
    }
    throw new Error(`code-server did not answer on port ${this.port} within 30 s:\n${this.log}`);
  }

  async stop(): Promise<void> {
    const p = this.proc;
    if (p && p.exitCode === null) {
      const exited = new Promise((r) => p.once('exit', r));
      p.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      if (p.exitCode === null) p.kill('SIGKILL');
    }
    rmSync(this.root, { recursive: true, force: true });
  }
}
