import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadTask } from '../../src/core/tasks/load';
import { TbrlError } from '../../src/core/errors';

function tbTask(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'tbrl-confine-'));
  const all = { 'task.yaml': 'instruction: do it\n', Dockerfile: 'FROM debian:bookworm-slim\n', 'run-tests.sh': '#!/bin/bash\n', ...files };
  for (const [name, text] of Object.entries(all)) {
    mkdirSync(join(dir, name, '..'), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  return dir;
}

function harborTask(): string {
  const dir = mkdtempSync(join(tmpdir(), 'tbrl-confine-h-'));
  mkdirSync(join(dir, 'environment'));
  mkdirSync(join(dir, 'tests'));
  writeFileSync(join(dir, 'task.toml'), 'version = "1.0"\n');
  writeFileSync(join(dir, 'environment', 'Dockerfile'), 'FROM debian:bookworm-slim\n');
  writeFileSync(join(dir, 'tests', 'test.sh'), '#!/bin/bash\n');
  return dir;
}

async function refused(dir: string, code: string, ...parts: RegExp[]): Promise<void> {
  await assert.rejects(loadTask(dir), (err: unknown) => {
    assert.ok(err instanceof TbrlError, String(err));
    assert.equal(err.code, code, err.message);
    for (const p of parts) assert.match(err.message, p);
    return true;
  });
}

test('an honest Terminal-Bench task with the standard compose file loads', async () => {
  const dir = tbTask({
    'docker-compose.yaml': 'services:\n  client:\n    build:\n      dockerfile: Dockerfile\n    image: ${T_BENCH_TASK_DOCKER_CLIENT_IMAGE_NAME}\n    volumes:\n      - ${T_BENCH_TASK_LOGS_PATH}:${T_BENCH_CONTAINER_LOGS_PATH}\n',
    'tests/test_outputs.py': 'def test_x(): pass\n',
  });
  symlinkSync('test_outputs.py', join(dir, 'tests', 'alias.py'));
  const task = await loadTask(dir);
  assert.equal(task.format, 'terminal-bench');
});

test('compose build.context ../../etc is refused naming the file, the key and the rule', async () => {
  const dir = tbTask({ 'docker-compose.yaml': 'services:\n  client:\n    build:\n      context: ../../../../../../etc\n' });
  await refused(dir, 'TASK_PATH_ESCAPES', /docker-compose\.yaml/, /build\.context|build context/, /outside the task directory/, /\/etc/);
});

test('an absolute build context is refused', async () => {
  const dir = tbTask({ 'docker-compose.yaml': 'services:\n  client:\n    build:\n      context: /etc\n' });
  await refused(dir, 'TASK_PATH_ESCAPES', /\/etc/);
});

test('compose env_file and dockerfile outside the task are refused', async () => {
  await refused(tbTask({ 'docker-compose.yaml': 'services:\n  client:\n    build: .\n    env_file: [../../../root/.env]\n' }), 'TASK_PATH_ESCAPES', /env_file/);
  await refused(tbTask({ 'docker-compose.yaml': 'services:\n  client:\n    build:\n      context: .\n      dockerfile: ../../../../x/Dockerfile\n' }), 'TASK_PATH_ESCAPES', /dockerfile/);
});

test('run-tests.sh, tests/ and a link inside tests/ that point at host files are refused', async () => {
  const a = tbTask({});
  const { rmSync } = await import('node:fs');
  rmSync(join(a, 'run-tests.sh'));
  symlinkSync('/etc/passwd', join(a, 'run-tests.sh'));
  await refused(a, 'TASK_PATH_ESCAPES', /run-tests\.sh/, /\/etc\/passwd/);
  const b = tbTask({});
  symlinkSync('/etc', join(b, 'tests'));
  await refused(b, 'TASK_PATH_ESCAPES', /tests/);
  const c = tbTask({ 'tests/ok.py': '' });
  symlinkSync('/etc/shadow', join(c, 'tests', 'leak'));
  await refused(c, 'TASK_PATH_ESCAPES', /leak/, /symbolic link/);
});

test('a Harbor instruction.md or solution/ linking out of the task is refused', async () => {
  const a = harborTask();
  symlinkSync('/etc/hostname', join(a, 'instruction.md'));
  await refused(a, 'TASK_PATH_ESCAPES', /instruction\.md/, /\/etc\/hostname/);
  const b = harborTask();
  writeFileSync(join(b, 'instruction.md'), 'do it\n');
  symlinkSync('/etc', join(b, 'solution'));
  await refused(b, 'TASK_PATH_ESCAPES', /solution/);
  const c = harborTask();
  writeFileSync(join(c, 'instruction.md'), 'do it\n');
  symlinkSync('/root', join(c, 'environment', 'home'));
  await refused(c, 'TASK_PATH_ESCAPES', /environment/, /home/);
});

test('a weights file that links out is refused before it is parsed', async () => {
  const a = tbTask({});
  symlinkSync('/etc/passwd', join(a, 'test_weights.json'));
  await refused(a, 'TASK_PATH_ESCAPES', /test_weights\.json/);
});

test('privileged compose keys are refused by name unless allowed; the socket is never a harness variable', async () => {
  const compose = 'services:\n  client:\n    build: .\n    privileged: true\n    cap_add: [SYS_ADMIN]\n    network_mode: host\n    volumes:\n      - /var/run/docker.sock:/var/run/docker.sock\n';
  const dir = tbTask({ 'docker-compose.yaml': compose });
  await refused(dir, 'PRIVILEGE_REFUSED', /services\.client\.privileged/, /cap_add/, /network_mode/, /docker\.sock/, /--allow-privilege/);
  await assert.rejects(loadTask(dir, { allowPrivileges: ['privileged', 'cap_add', 'network_mode'] }), /volumes/);
  const ok = tbTask({ 'docker-compose.yaml': 'services:\n  client:\n    build: .\n    cap_add: [SYS_PTRACE]\n' });
  const task = await loadTask(ok, { allowPrivileges: ['cap_add'] });
  assert.deepEqual(task.extra.allowedPrivileges, ['services.client.cap_add']);
});

test('a Harbor environment/docker-compose.yaml is confined relative to environment/ and its privilege keys refused', async () => {
  const ok = harborTask();
  writeFileSync(join(ok, 'instruction.md'), 'do it\n');
  writeFileSync(join(ok, 'environment', 'docker-compose.yaml'), 'services:\n  main:\n    build:\n      context: .\n');
  assert.equal((await loadTask(ok)).format, 'harbor');
  const escape = harborTask();
  writeFileSync(join(escape, 'instruction.md'), 'do it\n');
  writeFileSync(join(escape, 'environment', 'docker-compose.yaml'), 'services:\n  main:\n    build:\n      context: ../..\n');
  await refused(escape, 'TASK_PATH_ESCAPES', /environment\/docker-compose\.yaml/, /build\.context/);
  const priv = harborTask();
  writeFileSync(join(priv, 'instruction.md'), 'do it\n');
  writeFileSync(join(priv, 'environment', 'docker-compose.yaml'), 'services:\n  main:\n    build: .\n    pid: host\n');
  await refused(priv, 'PRIVILEGE_REFUSED', /services\.main\.pid/);
});
