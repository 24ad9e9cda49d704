/**
 * The cage helper (sandbox/cage/cage.c), built as the studio builds it, run here: it drops the
 * capability it is told before it execs anything, refuses to run the program when it cannot, and
 * its mkdir makes the state directory mode 0700. The frame shell's side is covered against Docker
 * in test/chaos/hostile.test.ts.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { cageAssets } from '../../src/core/sandbox/cage';
import { frameShellPrelude } from '../../src/core/sandbox/shell';

const cache = mkdtempSync(join(tmpdir(), 'tbrl-cage-unit-'));
process.env.TBRL_CACHE_DIR = cache;
const assets = cageAssets();
// The one build in the fresh cache: ~/.cache/tbrl/cage/<source digest>/cage.
const cage = join(cache, 'cage', readdirSync(join(cache, 'cage'))[0] ?? 'missing', 'cage');
const root = process.getuid?.() === 0;

function capBnd(text: string): bigint {
  return BigInt(`0x${/CapBnd:\s*([0-9a-f]+)/.exec(text)![1]}`);
}

describe('cage helper', () => {
  it('is built statically (gcc -static) and offered with the static bash, or says what is missing', () => {
    const names = assets.files.map((f) => f.name);
    assert.ok(names.includes('cage'), assets.missing.join('; '));
    const file = spawnSync('file', [cage], { encoding: 'utf8' });
    if (file.status === 0) assert.match(file.stdout, /statically linked/);
    assert.match(assets.digest, /^[0-9a-f]{16}$/);
    if (!names.includes('bash')) assert.match(assets.missing.join(' '), /bash-static/);
  });

  it('run: the program starts without the capability (bounding set); the caller keeps it', { skip: !root && 'needs root (CAP_SETPCAP) to drop a capability' }, () => {
    const before = capBnd(spawnSync('cat', ['/proc/self/status'], { encoding: 'utf8' }).stdout);
    assert.ok(before & (1n << 29n), 'this process has no CAP_AUDIT_WRITE to drop');
    const r = spawnSync(cage, ['run', '29', '/bin/cat', '/proc/self/status'], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(capBnd(r.stdout) & (1n << 29n), 0n);
    assert.equal(capBnd(r.stdout) | (1n << 29n), before, 'more than the one capability was dropped');
    const eff = BigInt(`0x${/CapEff:\s*([0-9a-f]+)/.exec(r.stdout)![1]}`);
    assert.equal(eff & (1n << 29n), 0n);
    assert.equal(spawnSync(cage, ['probe', '29']).status, 0);
  });

  it('never runs the program uncaged: a capability it cannot drop, or no capability, is exit 126', () => {
    const marker = join(cache, 'ran');
    for (const bad of ['64', 'x', '']) {
      const r = spawnSync(cage, ['run', bad, '/bin/sh', '-c', `: > ${marker}`], { encoding: 'utf8' });
      assert.equal(r.status, 126, `${bad}: ${r.stderr}`);
      assert.match(r.stderr, /could not drop capability/);
      assert.throws(() => statSync(marker), 'the program ran');
    }
    assert.equal(spawnSync(cage, ['probe', '64']).status, 1);
    assert.equal(spawnSync(cage, ['nonsense']).status, 2);
  });

  it('mkdir: creates the missing parents and the state directory with mode 0700', () => {
    const dir = join(cache, 'a', 'b', '.tbrl-shell-x');
    assert.equal(spawnSync(cage, ['mkdir', dir]).status, 0);
    assert.equal(statSync(dir).mode & 0o777, 0o700);
    assert.equal(spawnSync(cage, ['mkdir', dir]).status, 0, 'an existing directory is not an error');
    writeFileSync(join(cache, 'file'), '');
    assert.equal(spawnSync(cage, ['mkdir', join(cache, 'file', 'x')]).status, 1);
    rmSync(join(cache, 'a'), { recursive: true });
  });
});

describe('frame shell prelude', () => {
  it('executes nothing by name while it holds the nonce but bash builtins, the helper (by its mount) and the setpriv/mkdir fallback', () => {
    const text = frameShellPrelude('0'.repeat(32), '/app', '/tmp/.tbrl-shell-x');
    assert.match(text, /\/proc\/self\/mountinfo/);
    assert.match(text, /case ,\$__tbrl_x, in \*,ro,\*\)/, 'the helper is trusted only on a read-only mount');
    assert.match(text, /if \[ -n "\$__tbrl_helper" \]; then "\$__tbrl_helper" mkdir "\$__tbrl_d"; else mkdir -p/);
    assert.match(text, /__tbrl_cage=\("\$__tbrl_helper" run 29\)/);
    // setpriv is looked for only when there is no helper.
    assert.match(text, /if \[ -n "\$__tbrl_helper" \]; then for __tbrl_x in 1; do\n[^\n]*"\$__tbrl_helper" probe 29[\s\S]*\nelif type -P setpriv/);
  });
});

process.on('exit', () => rmSync(cache, { recursive: true, force: true }));
