// Bundles the three front ends. The extension keeps `vscode` external (the host provides it);
// native optional deps of dockerode's ssh transport are left out because VS Code's runtime cannot load them.
import * as esbuild from 'esbuild';
import { RUNTIME_ASSETS } from './build-assets.mjs';
import { chmodSync, mkdirSync, cpSync, existsSync, readdirSync } from 'node:fs';

const watch = process.argv.includes('--watch');
const common = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  sourcemap: true,
  logLevel: 'warning',
  // node-llama-cpp (ESM + native addon) is loaded at run time by `tbrl serve` only, from node_modules.
  external: ['cpu-features', 'ssh2', 'bufferutil', 'utf-8-validate', 'node-llama-cpp'],
  // Prefer ES module builds: jsonc-parser's UMD build requires './impl/*' at run time, which a bundle cannot resolve.
  mainFields: ['module', 'main'],
};

const builds = [
  // The .vsix has no node_modules: ssh2 (required by docker-modem at load) is replaced by a stand-in that explains itself.
  { ...common, entryPoints: ['src/extension/extension.ts'], outfile: 'dist/extension.js', external: ['cpu-features', 'bufferutil', 'utf-8-validate', 'vscode', 'node-llama-cpp'], alias: { ssh2: './src/extension/ssh2-unavailable.ts' } },
  // `tbrl` is a small launcher (src/cli/launcher.ts) that loads the CLI bundle through a V8 code cache.
  { ...common, entryPoints: ['src/cli/launcher.ts'], outfile: 'dist/cli.js', sourcemap: false, banner: { js: '#!/usr/bin/env node' } },
  { ...common, entryPoints: ['src/cli/main.ts'], outfile: 'dist/cli-main.js' },
  // The CLI the extension runs as a child (Run Evaluation): self-contained like the extension, since the .vsix has no node_modules.
  { ...common, entryPoints: ['src/cli/main.ts'], outfile: 'dist/extension-cli.js', external: ['cpu-features', 'bufferutil', 'utf-8-validate', 'node-llama-cpp'], alias: { ssh2: './src/extension/ssh2-unavailable.ts' } },
];
// One browser bundle per webview app (webview/<app>/main.ts -> dist/webview/<app>.js); d3 is bundled in.
for (const app of existsSync('webview') ? readdirSync('webview') : []) {
  if (!existsSync(`webview/${app}/main.ts`)) continue;
  builds.push({ entryPoints: [`webview/${app}/main.ts`], outfile: `dist/webview/${app}.js`, bundle: true, platform: 'browser', format: 'iife', target: 'es2022', sourcemap: true, minify: !watch, logLevel: 'warning' });
}

mkdirSync('dist', { recursive: true });
if (watch) {
  for (const b of builds) await (await esbuild.context(b)).watch();
} else {
  await Promise.all(builds.map((b) => esbuild.build(b)));
  chmodSync('dist/cli.js', 0o755);
}
// Prompt files and dockerode's BuildKit protos are read at run time, so they travel next to the bundle.
for (const { from, to } of RUNTIME_ASSETS) {
  if (existsSync(from)) cpSync(from, to, { recursive: true });
}
