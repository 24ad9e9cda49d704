import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
// @ts-expect-error: a plain .mjs build helper without types
import { RUNTIME_ASSETS } from '../../scripts/build-assets.mjs';

const assets = RUNTIME_ASSETS as { from: string; to: string }[];
/** Bundled libraries that read files next to themselves at run time (`path.resolve(__dirname, ...)`). */
const LIBS_READING_OWN_FILES = ['node_modules/dockerode/lib', 'node_modules/docker-modem/lib'];

function dirnameReads(): { file: string; target: string }[] {
  const found: { file: string; target: string }[] = [];
  for (const lib of LIBS_READING_OWN_FILES) {
    for (const name of readdirSync(lib).filter((n) => n.endsWith('.js'))) {
      const source = readFileSync(join(lib, name), 'utf8');
      for (const m of source.matchAll(/path\.(?:resolve|join)\(\s*__dirname\s*,((?:\s*["'][^"']+["']\s*,?)+)\)/g)) {
        const parts = [...m[1].matchAll(/["']([^"']+)["']/g)].map((p) => p[1]);
        // In the bundle __dirname is dist/, so the file must be at dist/<parts>.
        found.push({ file: join(lib, name), target: ['dist', ...parts].join('/') });
      }
    }
  }
  return found;
}

test('every file a bundled library reads from its own folder is copied next to the bundle', () => {
  const reads = dirnameReads();
  // dockerode's BuildKit builds load auth.proto and buildkit_status.proto: without them `tbrl validate` crashed with ENOENT dist/proto/auth.proto.
  assert.ok(reads.some((r) => r.target === 'dist/proto/auth.proto'), `expected dockerode to read proto/auth.proto, found ${JSON.stringify(reads)}`);
  for (const { file, target } of reads) {
    const asset = assets.find((a) => target.startsWith(`${a.to}/`) && existsSync(a.from + target.slice(a.to.length)));
    assert.ok(asset, `${file} reads ${target} at run time, but no RUNTIME_ASSETS entry in scripts/build-assets.mjs copies it`);
  }
});

test('the .vsix keeps every run-time asset the extension bundle reads', () => {
  const ignore = readFileSync('.vscodeignore', 'utf8').split('\n');
  for (const { to } of assets) assert.ok(ignore.includes(`!${to}/**`), `.vscodeignore must keep !${to}/**`);
});
