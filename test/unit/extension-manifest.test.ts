import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { SETTING_DEFAULTS, readSettings, VERIFIER_MODE_VALUES } from '../../src/extension/settings';

// The extension's command table imports vscode, so its ids are read from the sources here.
const pkg = JSON.parse(readFileSync('package.json', 'utf8'));
const props: Record<string, { default: unknown; enum?: string[] }> = pkg.contributes.configuration.properties;

test('every tbrl.* setting in package.json is read by readSettings with the same default, and the reader reads no undeclared key', () => {
  const declared = Object.keys(props).filter((k) => k.startsWith('tbrl.')).map((k) => k.slice(5));
  const read = new Set<string>();
  readSettings((k) => {
    read.add(k);
    return undefined;
  });
  // docker.socketPath and sandbox.baseImageMap are shared with the CLI side; they flow through the same reader.
  assert.deepEqual([...read].sort(), declared.sort());
  for (const [k, v] of Object.entries(SETTING_DEFAULTS)) assert.deepEqual(props[`tbrl.${k}`].default, v, `default of tbrl.${k}`);
  assert.deepEqual(props['tbrl.verifier.mode'].enum, [...VERIFIER_MODE_VALUES]);
});

test('readSettings names each bad value and falls back to its default', () => {
  const values: Record<string, unknown> = { 'model.n': 0, 'verifier.mode': 'best-of', 'limits.maxSteps': 2.5, 'model.temperature': 7, 'sandbox.baseImageMap': { 'python:3.13': 3, 'ubuntu:22.04': 'tbrl-standin/ubuntu:latest' }, 'model.baseUrl': 'http://h/v1' };
  const { settings, problems } = readSettings((k) => values[k]);
  assert.equal(settings.model.n, 1);
  assert.equal(settings.verifier.mode, 'none');
  assert.equal(settings.limits.maxSteps, 50);
  assert.equal(settings.model.temperature, undefined);
  assert.equal(settings.model.baseUrl, 'http://h/v1');
  assert.deepEqual(settings.sandbox.baseImageMap, { 'ubuntu:22.04': 'tbrl-standin/ubuntu:latest' });
  assert.equal(problems.length, 5);
  assert.match(problems.join('\n'), /tbrl\.model\.n must be a whole number >= 1 \(got 0\)/);
  assert.match(problems.join('\n'), /tbrl\.verifier\.mode "best-of" is not one of none, listwise/);
});

test('the command ids registered by the extension are exactly those contributed in package.json', () => {
  const dir = 'src/extension/commands';
  const ids = new Set<string>();
  for (const f of readdirSync(dir)) for (const m of readFileSync(`${dir}/${f}`, 'utf8').matchAll(/id: '(tbrl\.[A-Za-z.]+)'/g)) ids.add(m[1]);
  const contributed = pkg.contributes.commands.map((c: { command: string }) => c.command);
  assert.deepEqual([...ids].sort(), [...contributed].sort());
  const index = readFileSync(`${dir}/index.ts`, 'utf8');
  const listed = /COMMANDS: readonly CommandDef\[\] = \[([^\]]+)\]/.exec(index)![1].split(',').map((s) => s.trim());
  assert.equal(listed.length, contributed.length, 'every command module is in the COMMANDS list');
});

test('the debugger contribution: type tbrl, launch attributes match the adapter, snippets are valid', () => {
  const dbg = pkg.contributes.debuggers.find((d: { type: string }) => d.type === 'tbrl');
  assert.ok(dbg);
  const attrs = Object.keys(dbg.configurationAttributes.launch.properties);
  const launchArgs = readFileSync('src/extension/debug/launch-args.ts', 'utf8');
  for (const a of attrs) assert.match(launchArgs, new RegExp(`\\b${a}\\?:`), `LaunchArgs declares ${a}`);
  for (const s of dbg.configurationSnippets) {
    assert.equal(s.body.type, 'tbrl');
    assert.ok(s.body.trajectory || s.body.task, `${s.label} names a trajectory or a task`);
  }
  assert.ok(pkg.activationEvents.includes('onDebugResolve:tbrl'));
  assert.match(pkg.scripts.package, /vsce package --no-dependencies/);
});

test('.vscodeignore lets only bundles, prompts, media and image recipes into the .vsix', () => {
  const lines = readFileSync('.vscodeignore', 'utf8').split('\n').filter((l) => l && !l.startsWith('#'));
  assert.equal(lines[0], '**');
  for (const l of lines.slice(1)) assert.match(l, /^!(dist\/(extension\.js|webview\/\*\.js|prompts\/\*\*)|media\/\*\*|sandbox\/images(\.json|\/\*\*)|package\.json|README\.md|LICENSE)$/);
});
