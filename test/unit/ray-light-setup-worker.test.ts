// The local dev clusters start runtime-env workers through scripts/ray_light_setup_worker.py instead of
// Ray's setup_worker.py (one `import ray` fewer per worker). The worker it execs must be exactly the one
// Ray's script would exec: same environment (with Ray's ${X} expansion), same command prefix, same
// arguments. Both scripts run here on the same context, with a "worker" that prints what it got.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { tmpdir } from 'node:os';

const PYTHON = resolve('.venv/ray/bin/python');
const LIGHT = resolve('scripts/ray_light_setup_worker.py');
const RAY_SETUP = resolve('.venv/ray/lib/python3.11/site-packages/ray/_private/workers/setup_worker.py');
const WORKER = 'import json, os, sys; print(json.dumps({"cwd": os.getcwd(), "A": os.environ.get("A"), "B": os.environ.get("B"), "argv": sys.argv[1:], "exe": sys.executable}))';

function run(script: string, context: object, args: string[]): unknown {
  const r = spawnSync(PYTHON, [script, `--serialized-runtime-env-context=${JSON.stringify(context)}`, '--language=PYTHON', '-c', WORKER, ...args], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH, HOME: '/home/someone' },
  });
  assert.equal(r.status, 0, `${script}: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop()!);
}

test("the light setup script execs the worker Ray's setup_worker.py would", () => {
  const dir = mkdtempSync(join(tmpdir(), 'light-setup-worker-'));
  const context = {
    env_vars: { A: 'x${HOME}y', B: '${TBRL_NOT_SET_ANYWHERE}z' },
    command_prefix: ['cd', dir, '&&'],
    py_executable: PYTHON,
  };
  const args = ['plain', 'with space', "it's", '$HOME', '--flag=1'];
  const light = run(LIGHT, context, args);
  assert.deepEqual(light, { cwd: dir, A: 'x/home/someoney', B: 'z', argv: args, exe: PYTHON });
  assert.deepEqual(light, run(RAY_SETUP, context, args));
});

test('an empty context runs the worker as it is', () => {
  const light = run(LIGHT, {}, ['a']) as { argv: string[]; A: unknown };
  assert.deepEqual(light.argv, ['a']);
  assert.equal(light.A, null);
});
