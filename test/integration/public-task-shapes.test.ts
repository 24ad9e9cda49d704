/**
 * Public task suites run as they are (issue #15, images side): Terminal-Bench 1.x tasks written in
 * the shapes public tasks use, run end to end with the oracle policy against real Docker:
 * - a Dockerfile on python:3.13-slim (unpullable here: the Python stand-in) with a heredoc RUN, a
 *   heredoc COPY and a `pip install` under a BuildKit cache mount;
 * - an image whose ENTRYPOINT starts the service the tests check;
 * - a verifier that fetches its tools from the network: a verifier_error naming the host, masked
 *   in credit, and invalid for `tbrl validate` (never "the empty agent fails").
 */
import { runTaskOk } from '../helpers/run';
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { tmpdir } from 'node:os';
import { creditForGroup } from '../../src/core/depgpo/credit';
import { readTrajectory } from '../../src/core/trajectory/reader';
import { validateTask } from '../../src/core/tasks/validate';
import { DockerSandboxProvider } from '../../src/core/sandbox/provider';
import { LABEL_RUN } from '../../src/core/sandbox/types';

const scratch = mkdtempSync(join(tmpdir(), 'tbrl-public-shapes-'));
const provider = new DockerSandboxProvider();
const env = { PATH: process.env.PATH, HOME: process.env.HOME, DOCKER_HOST: process.env.DOCKER_HOST } as NodeJS.ProcessEnv;
const built = new Set<string>();
after(async () => {
  // Our own containers are gone with each run; the task images are ours to remove.
  for (const image of built) await provider.docker.getImage(image).remove({ force: true }).catch(() => undefined);
  rmSync(scratch, { recursive: true, force: true });
});

const TASK_YAML = (instruction: string) => `instruction: |-\n  ${instruction}\nauthor_email: fixture@example.invalid\ndifficulty: easy\ncategory: software-engineering\ntags: [fixture]\nparser_name: pytest\nmax_agent_timeout_sec: 120.0\nmax_test_timeout_sec: 60.0\n`;
const COMPOSE = 'services:\n  client:\n    build:\n      dockerfile: Dockerfile\n    command: [ "sh", "-c", "sleep infinity" ]\n';
const RUN_TESTS = '#!/bin/bash\npython3 -m pytest -p no:cacheprovider -rA "$TEST_DIR/test_outputs.py"\n';

function task(name: string, files: Record<string, string>): string {
  const dir = join(scratch, name);
  const all = { 'task.yaml': TASK_YAML(`Task ${name}.`), 'docker-compose.yaml': COMPOSE, 'run-tests.sh': RUN_TESTS, ...files };
  for (const [rel, content] of Object.entries(all)) {
    mkdirSync(dirname(join(dir, rel)), { recursive: true });
    writeFileSync(join(dir, rel), content);
  }
  return dir;
}

async function oracleRun(dir: string) {
  const r = await runTaskOk({ taskDir: dir, outDir: join(dir, 'run'), env, cwd: scratch, policy: 'oracle', trace: false, sandboxProvider: provider });
  if (r.header.sandbox?.image.startsWith('tbrl-task/')) built.add(r.header.sandbox.image);
  return r;
}

test('heredocs, a cache mount and pip install on the Python stand-in: the image builds as authored and the reference passes', async () => {
  const dir = task('pip-heredoc', {
    Dockerfile: [
      '# syntax=docker/dockerfile:1.4',
      'FROM python:3.13-slim',
      'RUN <<EOF',
      'set -e',
      'mkdir -p /srv/data',
      'echo "built with a heredoc" > /srv/data/heredoc.txt',
      'EOF',
      'COPY <<EOF /pkg/pyproject.toml',
      '[build-system]',
      'requires = ["setuptools"]',
      'build-backend = "setuptools.build_meta"',
      '[project]',
      'name = "greeter"',
      'version = "0.1.0"',
      'EOF',
      'COPY greeter.py /pkg/greeter.py',
      'RUN --mount=type=cache,target=/root/.cache/pip pip install --no-build-isolation /pkg',
      'WORKDIR /app',
      '',
    ].join('\n'),
    'greeter.py': 'def greet(name):\n    return f"hello {name}"\n',
    'solution.sh': '#!/bin/bash\npython -c "import greeter; print(greeter.greet(\'tbrl\'))" > /app/answer.txt\n',
    'tests/test_outputs.py': [
      'import subprocess',
      'def test_answer():',
      '    assert open("/app/answer.txt").read() == "hello tbrl\\n"',
      'def test_heredoc_ran():',
      '    assert open("/srv/data/heredoc.txt").read() == "built with a heredoc\\n"',
      'def test_uv_is_there():',
      '    assert subprocess.run(["uvx", "--version"], capture_output=True).returncode == 0',
      '',
    ].join('\n'),
  });
  const r = await oracleRun(dir);
  assert.equal(r.header.sandbox?.substitutedFrom, 'python:3.13-slim');
  assert.deepEqual(r.footer.outcome, { class: 'passed' }, JSON.stringify(r.footer.reward?.testError ?? r.footer.endMessage));
  assert.equal(r.footer.reward?.tests, 1);
});

test('an ENTRYPOINT that starts a service keeps running beside the agent\'s shell', async () => {
  const dir = task('entrypoint-service', {
    Dockerfile: [
      'FROM python:3.13-slim',
      'RUN mkdir -p /srv/www && echo "service up" > /srv/www/index.html',
      'COPY start.sh /usr/local/bin/start.sh',
      'RUN chmod +x /usr/local/bin/start.sh',
      'ENTRYPOINT ["/usr/local/bin/start.sh"]',
      'CMD ["bash"]',
      'WORKDIR /app',
      '',
    ].join('\n'),
    'start.sh': '#!/bin/sh\npython3 -m http.server 8000 --bind 127.0.0.1 --directory /srv/www >/tmp/http.log 2>&1 &\nexec "$@"\n',
    'solution.sh': '#!/bin/bash\nfor i in $(seq 50); do curl -sf http://127.0.0.1:8000/ > /app/page.txt && break; sleep 0.1; done\n',
    'tests/test_outputs.py': [
      'import urllib.request',
      'def test_service_answers():',
      '    assert urllib.request.urlopen("http://127.0.0.1:8000/", timeout=5).read() == b"service up\\n"',
      'def test_agent_reached_it():',
      '    assert open("/app/page.txt").read() == "service up\\n"',
      '',
    ].join('\n'),
  });
  const r = await oracleRun(dir);
  assert.deepEqual(r.footer.outcome, { class: 'passed' }, JSON.stringify(r.footer.reward?.testError ?? r.footer.reward?.testOutcomes));
});

test('a verifier that cannot fetch its tools is a masked verifier_error naming the host, and validate calls the task invalid', async () => {
  const dir = task('needs-network', {
    Dockerfile: 'FROM python:3.13-slim\nWORKDIR /app\n',
    'solution.sh': '#!/bin/bash\necho done > /app/out.txt\n',
    // As Terminal-Bench tasks do with uv (which the stand-in now ships): fetch the test runner at test time.
    'run-tests.sh': '#!/bin/bash\ncurl -LsSf https://astral.invalid/testkit/install.sh | sh\nsource $HOME/.local/bin/env\ntestkit run pytest -rA "$TEST_DIR/test_outputs.py"\n',
    'tests/test_outputs.py': 'def test_out():\n    assert open("/app/out.txt").read() == "done\\n"\n',
  });
  const r = await oracleRun(dir);
  assert.equal(r.footer.outcome?.class, 'verifier_error', JSON.stringify(r.footer.outcome));
  assert.equal(r.footer.outcome?.cause, 'the verifier could not reach astral.invalid: the task needs network or pre-provisioned tools');
  const t = await readTrajectory(r.trajectoryPath);
  const credit = creditForGroup([t]);
  assert.equal(credit.trajectories.length, 0, 'a masked run earns no advantage');
  assert.match(credit.skipped[0].reason, /^masked verifier_error: the verifier could not reach astral\.invalid/);

  const v = await validateTask(dir, { provider, oracle: 'script' });
  assert.equal(v.valid, false);
  assert.equal(v.empty.status, 'failed');
  assert.equal(v.empty.outcome, 'verifier_error');
  assert.match(v.empty.message ?? '', /could not be checked: the verifier could not reach astral\.invalid/);
  if (v.build.image) built.add(v.build.image);
  const left = await provider.docker.listContainers({ all: true, filters: { label: [`${LABEL_RUN}=${r.runId}`] } });
  assert.equal(left.length, 0);
});

test('an entrypoint that exits still leaves a working shell, with a note naming it', async () => {
  const dir = task('entrypoint-exits', { Dockerfile: 'FROM python:3.13-slim\nENTRYPOINT ["sh", "-c", "echo starting; exit 3"]\n' });
  const progress: string[] = [];
  const sb = await provider.create({ image: { kind: 'dockerfile', context: dir, dockerfile: 'Dockerfile' }, runId: `shapes-${Date.now()}`, onProgress: (l) => progress.push(l) });
  try {
    built.add(sb.info.image);
    assert.match(sb.info.entrypointNote ?? '', /entrypoint `sh -c echo starting; exit 3` exited with code 3; the container is kept running/);
    assert.ok(progress.includes(sb.info.entrypointNote!));
    const r = await sb.exec('echo still here');
    assert.equal(r.output, 'still here\n');
  } finally {
    await sb.close();
  }
});

// Verbatim the shape of most original TB1 tasks: the two scripts come from the harness.
const TB1_HARNESS_RUN_TESTS = '#!/bin/bash\nsource $TEST_DIR/setup-uv-pytest.sh\nbash $TEST_DIR/run-uv-pytest.sh\n';
const TB1_ANSWER_TEST = 'def test_answer():\n    assert open("/app/answer.txt").read().strip() == "42"\n';

test('a Terminal-Bench run-tests.sh that sources the harness\'s setup-uv-pytest.sh scores on the stand-in, offline or not', async () => {
  for (const offline of [false, true]) {
    const dir = task(`tb1-harness-scripts${offline ? '-offline' : ''}`, {
      ...(offline ? { 'task.yaml': `${TASK_YAML('Write 42 to /app/answer.txt.')}allow_internet: false\n` } : {}),
      Dockerfile: 'FROM ghcr.io/laude-institute/t-bench/python-3-13:20250620\nWORKDIR /app\n',
      'solution.sh': '#!/bin/bash\necho 42 > /app/answer.txt\n',
      'run-tests.sh': TB1_HARNESS_RUN_TESTS,
      'tests/test_outputs.py': TB1_ANSWER_TEST,
    });
    const r = await oracleRun(dir);
    assert.equal(r.header.sandbox?.substitutedFrom, 'ghcr.io/laude-institute/t-bench/python-3-13:20250620');
    assert.deepEqual(r.footer.outcome, { class: 'passed' }, `offline=${offline}: ${JSON.stringify(r.footer.outcome)} ${JSON.stringify(r.footer.reward?.testError)}`);
  }
});

test('a package index that accepts connections and never answers costs the harness scripts a bounded wait, not the verifier\'s timeout', async () => {
  // A blackholed or stalled index (a firewall that drops packets, a cold proxy) is what an offline CI
  // machine or GPU cluster often has. Left alone, uv retries for 4 x 30 s, past this task's 60 s.
  const dir = task('tb1-harness-stalled-index', {
    Dockerfile: [
      'FROM ghcr.io/laude-institute/t-bench/python-3-13:20250620',
      'COPY stall.py /usr/local/bin/stall.py',
      'ENV UV_DEFAULT_INDEX=http://127.0.0.1:3141/simple',
      'ENTRYPOINT ["/bin/sh", "-c", "python3 /usr/local/bin/stall.py & exec \\"$@\\"", "--"]',
      'CMD ["bash"]',
      'WORKDIR /app',
      '',
    ].join('\n'),
    'stall.py': 'import socket, time\ns = socket.socket()\ns.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\ns.bind(("127.0.0.1", 3141))\ns.listen(64)\nheld = []\nwhile True:\n    held.append(s.accept()[0])\n',
    'solution.sh': '#!/bin/bash\necho 42 > /app/answer.txt\n',
    'run-tests.sh': TB1_HARNESS_RUN_TESTS,
    'tests/test_outputs.py': TB1_ANSWER_TEST,
  });
  const started = Date.now();
  const r = await oracleRun(dir);
  assert.deepEqual(r.footer.outcome, { class: 'passed' }, `${JSON.stringify(r.footer.outcome)} ${JSON.stringify(r.footer.reward?.testError)}`);
  assert.ok(Date.now() - started < 58_000, `took ${Date.now() - started} ms`);
});

test('DepGPO credits a chmod the verifier checks with access(), traced end to end', async () => {
  const dir = task('chmod-credit', {
    Dockerfile: 'FROM python:3.13-slim\nWORKDIR /app\nRUN printf "#!/bin/sh\\necho hi\\n" > /app/run.sh && echo notes > /app/notes.txt\n',
    'solution.sh': '#!/bin/bash\nls /app\nchmod +x /app/run.sh\n',
    'tests/test_outputs.py': 'import os\ndef test_executable():\n    assert os.access("/app/run.sh", os.X_OK)\n',
  });
  const r = await runTaskOk({ taskDir: dir, outDir: join(dir, 'run'), env, cwd: scratch, policy: 'oracle', trace: true, sandboxProvider: provider });
  if (r.header.sandbox?.image.startsWith('tbrl-task/')) built.add(r.header.sandbox.image);
  assert.deepEqual(r.footer.outcome, { class: 'passed' });
  const d = r.footer.depgpo;
  assert.ok(d && !d.fallback, JSON.stringify(d?.fallback));
  const chmodStep = r.steps.findIndex((s) => s.actions.some((a) => a.kind === 'bash' && String((a.input as { cmd?: string }).cmd).includes('chmod')));
  const lsStep = r.steps.findIndex((s) => s.actions.some((a) => a.kind === 'bash' && String((a.input as { cmd?: string }).cmd).startsWith('ls')));
  assert.ok(chmodStep >= 0 && lsStep >= 0 && chmodStep !== lsStep, 'the two commands ran as separate steps');
  assert.equal(d.stepScores[chmodStep], 1, JSON.stringify(d));
  assert.equal(d.stepScores[lsStep], 0);
});
