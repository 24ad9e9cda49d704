// Bundles the three front ends. The extension keeps `vscode` external (the host provides it);
// native optional deps of dockerode's ssh transport are left out because VS Code's runtime cannot load them.
import * as esbuild from 'esbuild';
import { chmodSync, mkdirSync, cpSync, existsSync } from 'node:fs';

const watch = process.argv.includes('--watch');
const common = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  sourcemap: true,
  logLevel: 'warning',
  external: ['cpu-features', 'ssh2', 'bufferutil', 'utf-8-validate'],
  // Prefer ES module builds: jsonc-parser's UMD build requires './impl/*' at run time, which a bundle cannot resolve.
  mainFields: ['module', 'main'],
};

const builds = [
  { ...common, entryPoints: ['src/extension/extension.ts'], outfile: 'dist/extension.js', external: [...common.external, 'vscode'] },
  { ...common, entryPoints: ['src/cli/main.ts'], outfile: 'dist/cli.js', banner: { js: '#!/usr/bin/env node' } },
];
if (existsSync('webview/main.ts')) {
  builds.push({ entryPoints: ['webview/main.ts'], outfile: 'dist/webview.js', bundle: true, platform: 'browser', format: 'iife', target: 'es2022', sourcemap: true, logLevel: 'warning' });
}

mkdirSync('dist', { recursive: true });
if (watch) {
  for (const b of builds) await (await esbuild.context(b)).watch();
} else {
  await Promise.all(builds.map((b) => esbuild.build(b)));
  chmodSync('dist/cli.js', 0o755);
}
// Prompt files and image recipes are read at run time, so they travel next to the bundle.
for (const dir of ['src/core/prompts']) {
  if (existsSync(dir)) cpSync(dir, 'dist/prompts', { recursive: true });
}
