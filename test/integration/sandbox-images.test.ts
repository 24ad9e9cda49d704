import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync, cpSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { spawnSync } from 'node:child_process';
import {
  createDockerProvider,
  DevcontainerError,
  ImageBuildError,
  parseDevcontainer,
  type DockerSandbox,
} from '../../src/core/sandbox/index';

const provider = createDockerProvider();
const runId = `test-images-${process.pid}`;
const scratch = mkdtempSync(join(tmpdir(), 'tbrl-sbx-images-'));
// Unique per run so the first build really builds (the cache test relies on that).
const salt = `${process.pid}-${Date.now()}`;
const builtImages: string[] = [];

after(async () => {
  rmSync(scratch, { recursive: true, force: true });
  for (const image of builtImages) await provider.docker.getImage(image).remove({ force: true }).catch(() => undefined);
});

function dir(name: string, files: Record<string, string>): string {
  const root = join(scratch, name);
  for (const [rel, content] of Object.entries(files)) {
    mkdirSync(join(root, rel, '..'), { recursive: true });
    writeFileSync(join(root, rel), content);
  }
  return root;
}

describe('task images', () => {
  it('substitutes an unpullable FROM python:3.13-slim, builds, and caches by content', async () => {
    const ctx = dir('py', {
      Dockerfile: `FROM python:3.13-slim\nARG SALT\nRUN echo "$SALT" > /salt\nCOPY app.py /app/app.py\nWORKDIR /app\n`,
      'app.py': 'print("hello from task")\n',
    });
    const progress: string[] = [];
    const spec = { image: { kind: 'dockerfile' as const, context: ctx, dockerfile: 'Dockerfile', buildArgs: { SALT: salt } }, runId, onProgress: (l: string) => progress.push(l) };
    const sb = await provider.create(spec);
    try {
      builtImages.push(sb.info.image);
      assert.match(sb.info.image, /^tbrl-task\/[0-9a-f]{20}:latest$/);
      assert.equal(sb.info.substitutedFrom, 'python:3.13-slim');
      assert.ok(progress.some((l) => /substituting python:3\.13-slim -> tbrl-standin\/python:3/.test(l)), progress.join('\n'));
      // BuildKit names each instruction "[stage-0 3/5] RUN …" as it starts.
      assert.ok(progress.some((l) => /^\[[^\]]*\d+\/\d+\] RUN echo "[^"]*" > \/salt/.test(l)), progress.join('\n'));
      const r = await sb.exec('python3 app.py; cat /salt');
      assert.equal(r.output, `hello from task\n${salt}\n`);
    } finally {
      await sb.close();
    }
    const again: string[] = [];
    const sb2 = await provider.create({ ...spec, onProgress: (l) => again.push(l) });
    try {
      assert.equal(sb2.info.image, builtImages[0]);
      assert.ok(again.some((l) => l.startsWith('using cached image')), again.join('\n'));
      assert.ok(!again.some((l) => /\] RUN /.test(l)), 'a re-run must not rebuild');
    } finally {
      await sb2.close();
    }
  });

  it('reports a failing build with the failing step and its log tail', async () => {
    const ctx = dir('bad', { Dockerfile: `FROM debian:bookworm-slim\nRUN echo ${salt}\nRUN echo "about to fail" && exit 7\nRUN echo never\n` });
    await assert.rejects(provider.create({ image: { kind: 'dockerfile', context: ctx, dockerfile: 'Dockerfile' }, runId }), (err: unknown) => {
      assert.ok(err instanceof ImageBuildError, String(err));
      assert.equal(err.code, 'IMAGE_BUILD_FAILED');
      assert.equal(err.step, `line 3 of ${join(ctx, 'Dockerfile')}: RUN echo "about to fail" && exit 7`);
      assert.match(err.logTail, /about to fail/);
      assert.doesNotMatch(err.logTail, new RegExp(`^${salt}$`, 'm'), 'the tail is the failing step\'s own output');
      assert.match(err.message, /exit code: 7/);
      return true;
    });
  });
});

describe('image users', () => {
  it('writes files owned by the image USER, so a non-root agent can edit them', async () => {
    const ctx = dir('user', { Dockerfile: 'FROM debian:bookworm-slim\nRUN useradd -m agent\nUSER agent\nWORKDIR /home/agent\n' });
    const sb = await provider.create({ image: { kind: 'dockerfile', context: ctx, dockerfile: 'Dockerfile' }, runId });
    try {
      builtImages.push(sb.info.image);
      await sb.writeFile('/home/agent/notes.txt', 'mine\n');
      const r = await sb.exec('whoami; stat -c %U notes.txt; echo more >> notes.txt && cat notes.txt');
      assert.equal(r.output, 'agent\nagent\nmine\nmore\n');
    } finally {
      await sb.close();
    }
  });
});

describe('images without bash', () => {
  it('fail with a typed error that says to install bash, and leave no container', async () => {
    const ctx = dir('nobash', { Dockerfile: 'FROM debian:bookworm-slim\nRUN rm -f /bin/bash /usr/bin/bash\n' });
    const before = (await provider.docker.listContainers({ all: true, filters: { label: [`dev.tbrl.run=${runId}-nobash`] } })).length;
    // A create that unexpectedly succeeds must still close its sandbox, or its open shell keeps this file from ever ending.
    const created = provider.create({ image: { kind: 'dockerfile', context: ctx, dockerfile: 'Dockerfile' }, runId: `${runId}-nobash` }).then(async (sandbox) => {
      await sandbox.close();
      throw new Error('the sandbox started on an image without bash; expected SHELL_UNAVAILABLE');
    });
    await assert.rejects(created, (err: unknown) => {
      assert.equal((err as { code?: string }).code, 'SHELL_UNAVAILABLE', String(err));
      assert.match((err as Error).message, /Could not start bash in image tbrl-task\//);
      assert.match((err as Error).message, /apt-get install -y bash/);
      builtImages.push(/tbrl-task\/[0-9a-f]+:latest/.exec((err as Error).message)![0]);
      return true;
    });
    const after = await provider.docker.listContainers({ all: true, filters: { label: [`dev.tbrl.run=${runId}-nobash`] } });
    assert.equal(after.length, before);
  });
});

describe('devcontainer', () => {
  it('parses JSONC with comments and trailing commas, and reports syntax errors with a position', () => {
    const ws = dir('jsonc', {
      '.devcontainer/devcontainer.json': `{
  // a comment
  "build": { "dockerfile": "Dockerfile", "context": "..", "args": { "V": "1", }, },
  /* block comment */
  "containerEnv": { "WS": "\${containerWorkspaceFolder}", "BASE": "\${localWorkspaceFolderBasename}" },
  "mounts": ["source=\${localWorkspaceFolder}/data,target=/data,type=bind,readonly"],
  "postCreateCommand": { "one": "echo one", "two": ["echo", "two"] },
}`,
    });
    const cfg = parseDevcontainer(ws, join(ws, '.devcontainer/devcontainer.json'), { allowPrivileges: ['mounts'] });
    assert.equal(cfg.build?.context, ws);
    assert.equal(cfg.build?.dockerfile, join(ws, '.devcontainer', 'Dockerfile'));
    assert.deepEqual(cfg.build?.args, { V: '1' });
    assert.equal(cfg.workspaceFolder, '/workspaces/jsonc');
    assert.deepEqual(cfg.containerEnv, { WS: '/workspaces/jsonc', BASE: 'jsonc' });
    assert.deepEqual(cfg.mounts, [{ Type: 'bind', Source: `${ws}/data`, Target: '/data', ReadOnly: true }]);
    assert.deepEqual(cfg.lifecycle, [
      { name: 'postCreateCommand.one', command: 'echo one' },
      { name: 'postCreateCommand.two', command: ['echo', 'two'] },
    ]);
    const broken = dir('broken', { '.devcontainer/devcontainer.json': '{\n  "image": "debian:bookworm-slim"\n  "workspaceFolder": "/w"\n}' });
    assert.throws(() => parseDevcontainer(broken, join(broken, '.devcontainer/devcontainer.json')), (err: unknown) => {
      assert.ok(err instanceof DevcontainerError);
      assert.match(err.message, /CommaExpected at line 3, column 3/);
      assert.match(err.message, /Fix: correct the file/);
      return true;
    });
    const empty = dir('noimage', { '.devcontainer/devcontainer.json': '{ "name": "x" }' });
    assert.throws(() => parseDevcontainer(empty, join(empty, '.devcontainer/devcontainer.json')), /needs "image" or "build.dockerfile"/);
  });

  it('builds from devcontainer.json, copies the workspace in and returns the agent\'s changes as a patch', async () => {
    const ws = dir('project', {
      '.devcontainer/devcontainer.json': `{
  // build from the folder's Dockerfile
  "build": { "dockerfile": "Dockerfile", "args": { "SALT": "${salt}", }, },
  "containerEnv": { "PROJECT_ENV": "from-devcontainer" },
  "postCreateCommand": "echo created > /tmp/post-create",
}`,
      '.devcontainer/Dockerfile': 'FROM ubuntu:24.04\nARG SALT\nRUN echo "$SALT" > /salt\n',
      'src/main.txt': 'line 1\nline 2\nline 3\n',
      'README.md': 'readme\n',
    });
    const sb = (await provider.create({ image: { kind: 'devcontainer', workspaceFolder: ws }, runId })) as DockerSandbox;
    try {
      builtImages.push(sb.info.image);
      assert.equal(sb.info.workspaceMode, 'copy');
      assert.equal(sb.info.substitutedFrom, 'ubuntu:24.04');
      const r = await sb.exec('pwd; echo $PROJECT_ENV; cat /tmp/post-create; cat src/main.txt | wc -l');
      assert.equal(r.output, '/workspaces/project\nfrom-devcontainer\ncreated\n3\n');
      await sb.exec("sed -i 's/line 2/line two/' src/main.txt && echo new > added.txt && rm README.md");
      // The user's files are untouched in copy mode.
      assert.equal(readFileSync(join(ws, 'src/main.txt'), 'utf8'), 'line 1\nline 2\nline 3\n');
      const patch = await sb.workspaceChanges();
      assert.match(patch, /diff --git a\/src\/main.txt b\/src\/main.txt/);
      assert.match(patch, /-line 2\n\+line two/);
      assert.match(patch, /new file mode 100644/);
      assert.match(patch, /deleted file mode 100644/);
      // The patch applies to a copy of the host workspace and reproduces the container's state.
      const copy = join(scratch, 'apply');
      cpSync(ws, copy, { recursive: true });
      const applied = spawnSync('git', ['apply', '-'], { cwd: copy, input: patch, encoding: 'utf8' });
      assert.equal(applied.status, 0, applied.stderr);
      assert.equal(readFileSync(join(copy, 'src/main.txt'), 'utf8'), 'line 1\nline two\nline 3\n');
      assert.equal(readFileSync(join(copy, 'added.txt'), 'utf8'), 'new\n');
    } finally {
      await sb.close();
    }
  });

  it('bind-mounts the workspace only when asked, and says so', async () => {
    const ws = dir('bound', {
      '.devcontainer/devcontainer.json': '{ "image": "debian:bookworm-slim", "workspaceFolder": "/w" }',
      'f.txt': 'host\n',
    });
    const sb = await provider.create({ image: { kind: 'devcontainer', workspaceFolder: ws }, runId, workspace: { hostPath: ws, containerPath: '/w', mode: 'bind' } });
    try {
      assert.equal(sb.info.workspaceMode, 'bind');
      assert.equal((await sb.exec('cat f.txt && echo changed > f.txt')).output, 'host\n');
      assert.equal(readFileSync(join(ws, 'f.txt'), 'utf8'), 'changed\n');
    } finally {
      await sb.close();
    }
  });
});
