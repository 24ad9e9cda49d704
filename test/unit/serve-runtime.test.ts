// Where `tbrl serve` finds node-llama-cpp: the editor's .vsix carries no node_modules, so the
// server must run from a tbrl-studio install that has them, or the error must say how to get one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveServeCommand, installRootOf } from '../../src/core/serve/runtime';
import { TbrlError } from '../../src/core/errors';
import { fillLaunchDefaults } from '../../src/extension/debug/launch-defaults';
import { readSettings } from '../../src/extension/settings';

function layout() {
  const base = mkdtempSync(join(tmpdir(), 'tbrl-serve-runtime-'));
  const pkg = (dir: string, name: string) => {
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name }));
  };
  // The installed extension: bundles only.
  const vsix = join(base, 'extensions', 'tbrl.tbrl-studio-0.1.0');
  pkg(vsix, 'tbrl-studio');
  mkdirSync(join(vsix, 'dist'));
  writeFileSync(join(vsix, 'dist', 'extension.js'), '');
  writeFileSync(join(vsix, 'dist', 'extension-cli.js'), '');
  // A CLI install: built, with its dependencies.
  const cli = join(base, 'tbrl-studio');
  pkg(cli, 'tbrl-studio');
  pkg(join(cli, 'node_modules', 'node-llama-cpp'), 'node-llama-cpp');
  mkdirSync(join(cli, 'dist'));
  writeFileSync(join(cli, 'dist', 'cli.js'), '');
  // A checkout with dependencies but never built.
  const unbuilt = join(base, 'unbuilt');
  pkg(unbuilt, 'tbrl-studio');
  pkg(join(unbuilt, 'node_modules', 'node-llama-cpp'), 'node-llama-cpp');
  // `tbrl` on PATH, as npm links it: bin/tbrl -> ../tbrl-studio/dist/cli.js.
  const bin = join(base, 'bin');
  mkdirSync(bin);
  symlinkSync(join(cli, 'dist', 'cli.js'), join(bin, 'tbrl'));
  return { base, vsix, cli, unbuilt, bin, done: () => rmSync(base, { recursive: true, force: true }) };
}

test('the .vsix alone: an error that names the missing runtime, where it looked, and the fix', () => {
  const l = layout();
  try {
    assert.throws(() => resolveServeCommand({ packageRoot: l.vsix, fromSource: false, pathEnv: '/nonexistent' }), (err: unknown) => {
      assert.ok(err instanceof TbrlError);
      assert.equal(err.code, 'model-runtime-missing');
      assert.match(err.message, /node-llama-cpp/);
      assert.match(err.message, /\.vsix/);
      assert.ok(err.message.includes(l.vsix), 'says where it looked');
      assert.match(err.fix ?? '', /tbrl\.model\.serverPath/);
      assert.match(err.fix ?? '', /npm ci && npm run build/);
      assert.match(err.fix ?? '', /tbrl\.model\.baseUrl/);
      return true;
    });
  } finally {
    l.done();
  }
});

test('the .vsix finds the CLI install through tbrl.model.serverPath, or through `tbrl` on PATH', () => {
  const l = layout();
  try {
    const viaSetting = resolveServeCommand({ serverPath: l.cli, packageRoot: l.vsix, fromSource: false, pathEnv: '' });
    assert.deepEqual(viaSetting.args, [join(l.cli, 'dist', 'cli.js')]);
    assert.equal(viaSetting.root, l.cli);
    assert.equal(viaSetting.runtime, join(l.cli, 'node_modules', 'node-llama-cpp'));
    // The setting may name the executable or any file inside the install.
    assert.equal(resolveServeCommand({ serverPath: join(l.bin, 'tbrl'), packageRoot: l.vsix, fromSource: false }).root, l.cli);
    const viaPath = resolveServeCommand({ packageRoot: l.vsix, fromSource: false, pathEnv: ['/nonexistent', l.bin].join(':') });
    assert.equal(viaPath.root, l.cli);
    assert.match(viaPath.source, /tbrl on PATH/);
  } finally {
    l.done();
  }
});

test('a serverPath that cannot serve is an error about that path, not a silent search elsewhere', () => {
  const l = layout();
  try {
    for (const [path, why] of [[l.unbuilt, /no node-llama-cpp in its node_modules or no built CLI/], [l.base, /not a tbrl-studio directory/], [l.vsix, /no node-llama-cpp/]] as const) {
      assert.throws(() => resolveServeCommand({ serverPath: path, packageRoot: l.vsix, fromSource: false, pathEnv: l.bin }), (err: unknown) => {
        assert.ok(err instanceof TbrlError);
        assert.equal(err.code, 'model-runtime-missing');
        assert.ok(err.message.includes(path));
        assert.match(err.message, why);
        return true;
      });
    }
  } finally {
    l.done();
  }
});

test('the CLI runs its own install: the bundle, or the sources under tsx in development', () => {
  const l = layout();
  try {
    assert.deepEqual(resolveServeCommand({ packageRoot: l.cli, fromSource: false }).args, [join(l.cli, 'dist', 'cli.js')]);
    // This checkout under tsx (as the tests run): the sources, not a possibly stale bundle.
    const here = installRootOf(__dirname)!;
    const dev = resolveServeCommand({ packageRoot: here, fromSource: true });
    assert.deepEqual(dev.args, ['--import', 'tsx', join(here, 'src', 'cli', 'main.ts')]);
    assert.match(dev.runtime, /node-llama-cpp$/);
  } finally {
    l.done();
  }
});

test('tbrl.model.serverPath reaches the live launch (which hands it to runTask as TBRL_SERVER_PATH)', async () => {
  const { settings, problems } = readSettings((key) => (key === 'model.serverPath' ? '/opt/tbrl-studio' : undefined));
  assert.deepEqual(problems, []);
  assert.equal(settings.model.serverPath, '/opt/tbrl-studio');
  const args = await fillLaunchDefaults({ task: '/t', policy: 'local' }, '/ws', settings, async () => undefined);
  assert.ok(!('error' in args));
  assert.equal(args.serverPath, '/opt/tbrl-studio');
  const oracle = await fillLaunchDefaults({ task: '/t', policy: 'oracle' }, '/ws', settings, async () => undefined);
  assert.ok(!('error' in oracle) && oracle.serverPath === undefined, 'the oracle serves no model');
});
