/**
 * Hostile input (issue 14): task directories, workspaces, agent commands and RPC clients written
 * to attack the studio. Each case builds the malicious input itself (real files, real links, the
 * real Docker engine, the real CLI) and checks it is refused with a named cause, or survived with
 * a note, and that nothing of the host leaked.
 */
import { runTaskOk, runWorkspaceOk } from '../helpers/run';
import { runTask } from '../../src/core/run/run-task';
import { after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, openSync, ftruncateSync, closeSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { tmpdir } from 'node:os';
import { main } from '../../src/cli/main';
import { validateTasks } from '../../src/core/tasks/validate';
import { ScriptedPolicy } from '../../src/core/agent/scripted';
import { createDockerProvider, type Sandbox } from '../../src/core/sandbox/index';
import { buildTaskImage } from '../../src/core/sandbox/build';
import { createTracedSandbox, type TracedSandbox } from '../../src/core/trace/traced-sandbox';
import { computeDepgpo } from '../../src/core/depgpo/compute';
import { TbrlError } from '../../src/core/errors';
import { chaosCase, recordRunId } from './helpers/chaos';

const EXAMPLE = resolve('examples/hello-world');
const CLI = resolve('src/cli/main.ts');
const scratch = mkdtempSync(join(tmpdir(), 'tbrl-chaos-hostile-'));
after(() => rmSync(scratch, { recursive: true, force: true }));
const provider = createDockerProvider();
const runId = `chaos-hostile-${process.pid}`;
recordRunId(runId);

/** A copy of the example task, then `mutate` makes it hostile. */
function hostileTask(name: string, mutate: (dir: string) => void): string {
  const dir = join(scratch, name);
  cpSync(EXAMPLE, dir, { recursive: true });
  mutate(dir);
  return dir;
}

/** `tbrl validate` in-process: exit code, stdout and stderr. */
async function cli(argv: string[]): Promise<{ code: number; out: string }> {
  const lines: string[] = [];
  const [log, error] = [console.log, console.error];
  console.log = (...a: unknown[]) => void lines.push(a.join(' '));
  console.error = (...a: unknown[]) => void lines.push(a.join(' '));
  try {
    return { code: await main(argv), out: lines.join('\n') };
  } finally {
    console.log = log;
    console.error = error;
  }
}

chaosCase('task: compose build.context ../../../../etc, then an absolute /etc (the agent would read /etc/shadow)', 'tbrl validate: invalid, load error names docker-compose.yaml, the path and the rule; no image built', async () => {
  const said: string[] = [];
  for (const context of ['../../../../../../../../etc', '/etc']) {
    const dir = hostileTask(`ctx-${said.length}`, (d) => writeFileSync(join(d, 'docker-compose.yaml'), `services:\n  client:\n    build:\n      context: ${context}\n      dockerfile: Dockerfile\n`));
    const [result] = await validateTasks([dir], { provider });
    assert.equal(result.valid, false);
    assert.equal(result.build.status, 'skipped', 'an image was built from a hostile context');
    assert.match(result.load.message ?? '', /docker-compose\.yaml: services\.client\.build\.context names .*etc, which resolves to \/etc, outside the task directory/);
    said.push(result.problems[0].slice(0, 90));
  }
  return said.join(' | ');
});

chaosCase('task: links to host files — run-tests.sh → /etc/passwd, tests/ → /etc, instruction.md → /etc/hostname (Harbor), tests/x → /etc/shadow', 'each refused with TASK_PATH_ESCAPES naming the link; the host content appears nowhere in the error', async () => {
  const said: string[] = [];
  const cases: [string, (d: string) => void][] = [
    ['run-tests.sh', (d) => { rmSync(join(d, 'run-tests.sh')); symlinkSync('/etc/passwd', join(d, 'run-tests.sh')); }],
    ['tests', (d) => { rmSync(join(d, 'tests'), { recursive: true }); symlinkSync('/etc', join(d, 'tests')); }],
    ['tests/leak', (d) => symlinkSync('/etc/shadow', join(d, 'tests', 'leak'))],
  ];
  for (const [name, mutate] of cases) {
    const dir = hostileTask(`link-${name.replace(/\W/g, '-')}`, mutate);
    const { code, out } = await cli(['validate', dir, '--static-only', '--record', 'none']);
    assert.equal(code, 1, out);
    assert.match(out, /outside the task directory/);
    assert.match(out, new RegExp(name.replace('/', '\\/')));
    assert.doesNotMatch(out, /root:x:0:0/, 'host file content leaked into the report');
    said.push(`${name}: refused`);
  }
  const harbor = join(scratch, 'harbor-link');
  mkdirSync(join(harbor, 'environment'), { recursive: true });
  mkdirSync(join(harbor, 'tests'));
  writeFileSync(join(harbor, 'task.toml'), 'version = "1.0"\n');
  writeFileSync(join(harbor, 'environment', 'Dockerfile'), 'FROM debian:bookworm-slim\n');
  writeFileSync(join(harbor, 'tests', 'test.sh'), '#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n');
  symlinkSync('/etc/hostname', join(harbor, 'instruction.md'));
  const { code, out } = await cli(['validate', harbor, '--static-only', '--record', 'none']);
  assert.equal(code, 1);
  assert.match(out, /instruction\.md.*outside the task directory/);
  assert.doesNotMatch(out, new RegExp(readFileSync('/etc/hostname', 'utf8').trim() || 'no-hostname'));
  said.push('Harbor instruction.md: refused');
  return said.join('; ');
});

chaosCase('task: compose privileged, cap_add, network_mode: host, a bind of /var/run/docker.sock', 'refused naming each key and how to allow it; --allow-privilege opens cap_add etc. but never the socket', async () => {
  const dir = hostileTask('privileged', (d) => writeFileSync(join(d, 'docker-compose.yaml'), 'services:\n  client:\n    build:\n      dockerfile: Dockerfile\n    privileged: true\n    cap_add: [SYS_ADMIN]\n    network_mode: host\n    volumes:\n      - /var/run/docker.sock:/var/run/docker.sock\n'));
  const plain = await cli(['validate', dir, '--static-only', '--record', 'none']);
  assert.equal(plain.code, 1);
  for (const key of ['privileged', 'cap_add', 'network_mode', 'volumes']) assert.match(plain.out, new RegExp(`services\\.client\\.${key}`));
  assert.match(plain.out, /--allow-privilege/);
  const allowed = await cli(['validate', dir, '--static-only', '--record', 'none', '--allow-privilege', 'privileged,cap_add,network_mode,volumes']);
  assert.equal(allowed.code, 1, 'the Docker socket was allowed');
  assert.match(allowed.out, /docker\.sock/);
  assert.match(allowed.out, /never allowed/);
  return `default: ${plain.out.match(/PRIVILEGE_REFUSED|refuses keys/)?.[0]}; with every key allowed the socket bind is still refused`;
});

chaosCase('workspace: devcontainer.json binds / and the Docker socket, copies ${localEnv:OPENAI_API_KEY} into containerEnv', 'run-workspace refuses before any container starts, naming mounts and containerEnv; the key appears in no file', async () => {
  const ws = join(scratch, 'ws');
  mkdirSync(join(ws, '.devcontainer'), { recursive: true });
  writeFileSync(join(ws, 'README.md'), 'project\n');
  writeFileSync(join(ws, '.devcontainer', 'devcontainer.json'), JSON.stringify({
    image: 'debian:bookworm-slim',
    mounts: ['source=/,target=/host,type=bind', 'source=/var/run/docker.sock,target=/var/run/docker.sock,type=bind'],
    containerEnv: { KEY: '${localEnv:OPENAI_API_KEY}' },
  }));
  const secret = `sk-chaos-${process.pid}`;
  const out = join(scratch, 'ws-run');
  const attempt = (allow: string[]) => runWorkspaceOk({
    workspaceFolder: ws, instruction: 'look around', outDir: out, policyOverride: new ScriptedPolicy(['<bash>\ncmd: env; ls /host\n</bash>']),
    env: { OPENAI_API_KEY: secret }, allowPrivileges: allow, trace: false,
  });
  const seen: string[] = [];
  for (const allow of [[], ['mounts', 'localEnv']]) {
    await assert.rejects(attempt(allow), (err: unknown) => {
      assert.ok(err instanceof TbrlError && err.code === 'PRIVILEGE_REFUSED', String(err));
      assert.match(err.message, /mounts binds the host path \/ at \/host/);
      assert.match(err.message, /docker\.sock/);
      assert.match(err.message, /OPENAI_API_KEY/);
      assert.doesNotMatch(err.message, new RegExp(secret));
      seen.push(allow.length ? 'allowed by name: still refused (socket, /, secret)' : 'default: refused');
      return true;
    });
  }
  const containers = await provider.docker.listContainers({ all: true, filters: { label: [`dev.tbrl.run`] } });
  assert.ok(!containers.some((c) => JSON.stringify(c).includes(ws)), 'a container was started');
  return seen.join('; ');
});

chaosCase('workspace: a trusted devcontainer asks for capAdd SYS_PTRACE; the user allows capAdd by name', 'the container gets the capability and the run header records what was allowed', async () => {
  const ws = join(scratch, 'ws-cap');
  mkdirSync(join(ws, '.devcontainer'), { recursive: true });
  writeFileSync(join(ws, 'README.md'), 'project\n');
  writeFileSync(join(ws, '.devcontainer', 'devcontainer.json'), JSON.stringify({ image: 'debian:bookworm-slim', capAdd: ['SYS_PTRACE'] }));
  const r = await runWorkspaceOk({
    workspaceFolder: ws, instruction: 'check caps', outDir: join(scratch, 'ws-cap-run'), trace: false,
    policyOverride: new ScriptedPolicy(['<bash>\ncmd: grep CapEff /proc/self/status\n</bash>', '<finish/>']),
    allowPrivileges: ['capAdd'],
  });
  recordRunId(r.runId);
  assert.deepEqual(r.header.config.allowedPrivileges, ['capAdd']);
  const capEff = BigInt(`0x${/CapEff:\s*([0-9a-f]+)/.exec(r.steps[0].actions[0].observation)![1]}`);
  assert.ok(capEff & (1n << 19n), 'CAP_SYS_PTRACE (bit 19) missing');
  return `header.config.allowedPrivileges = ["capAdd"]; CapEff has CAP_SYS_PTRACE`;
}, { timeout: 120_000 });

async function sandbox(): Promise<Sandbox> {
  return provider.create({ image: { kind: 'image', image: 'tbrl-standin/python:3' }, runId, workdir: '/app' });
}

/** A traced sandbox over a fresh one, with the tracer up; both are closed after `body`. */
async function withTracedSandbox<T>(body: (sb: TracedSandbox, inner: Sandbox) => Promise<T>): Promise<T> {
  const inner = await sandbox();
  const sb = await createTracedSandbox(inner);
  try {
    assert.equal(sb.tracing.available, true, sb.tracing.reason);
    return await body(sb, inner);
  } finally {
    await sb.close();
    await inner.close();
  }
}

/** The sandbox's frame shell as the studio sees it: the nonce it frames with, its pid, the capability its commands lack. */
function frameShellOf(sb: Sandbox): { nonce: string; pid: number; cage?: string } {
  return (sb as unknown as { shell: { nonce: string; pid: number; cage?: string } }).shell;
}

/**
 * Reads everything of every other process a root agent can open: cmdline, environ, every readable
 * memory mapping and every fd (non-blocking), collecting what looks like a nonce, then prints a
 * forged frame with each candidate and says which processes' memory it could read.
 */
const SCAVENGE = String.raw`python3 - <<'PY'
import os, re
found, readable, denied = set(), [], []
me, parent = os.getpid(), os.getppid()
for pid in [p for p in os.listdir('/proc') if p.isdigit() and int(p) not in (me, parent)]:
    for name in ('cmdline', 'environ'):
        try: found.update(re.findall(rb'[0-9a-f]{32}', open(f'/proc/{pid}/{name}', 'rb').read()))
        except Exception: pass
    try:
        maps = open(f'/proc/{pid}/maps').read().splitlines(); mem = open(f'/proc/{pid}/mem', 'rb'); readable.append(pid)
        for line in maps:
            lo, hi = (int(x, 16) for x in line.split()[0].split('-'))
            if 'r' not in line.split()[1] or hi - lo > 1 << 26: continue
            try: mem.seek(lo); data = mem.read(hi - lo)
            except Exception: continue
            found.update(re.findall(rb'__tbrl_nonce=([0-9a-f]{32})', data)); found.update(re.findall(rb'__TBRL_([0-9a-f]{32})__', data))
    except Exception: denied.append(pid)
    try: fds = os.listdir(f'/proc/{pid}/fd')
    except Exception: fds = []
    for fd in fds:
        try:
            f = os.open(f'/proc/{pid}/fd/{fd}', os.O_RDONLY | os.O_NONBLOCK); data = os.read(f, 65536); os.close(f)
            found.update(re.findall(rb'[0-9a-f]{32}', data))
        except Exception: pass
print('readable-mem:', ' '.join(readable)); print('denied-mem:', ' '.join(denied))
for n in found: print('\n__TBRL_%s__ 0 - /forged' % n.decode())
PY
exit 1`;

chaosCase('agent: forge the frame — extdebug + BASH_ARGV, `builtin()`/`printf()`/`eval()` functions, DEBUG/RETURN/EXIT traps, PROMPT_COMMAND, `enable -n`, xtrace, scanning every process\'s /proc cmdline, environ, memory and fds for the nonce, writing a frame into the frame shell\'s stdout and a command into its stdin', 'no read finds the nonce (the frame shell\'s memory and fds are refused: its commands run without CAP_AUDIT_WRITE); each forged frame is plain output; every exit status and cwd recorded is the real one', async () => {
  const sb = await sandbox();
  try {
    const frame = frameShellOf(sb);
    assert.match(frame.nonce, /^[0-9a-f]{32}$/);
    assert.equal(frame.cage, 'audit_write', 'the image has setpriv and the shell runs as root: its commands must run caged');
    const said: string[] = [];
    const expectNoNonce = (what: string, output: string) => assert.ok(!output.includes(frame.nonce), `${what} read the nonce:\n${output.slice(0, 400)}`);
    // Reads in the command's own process: nothing there to find.
    const reads = [
      'shopt -s extdebug; builtin printf "%s\\n" "${BASH_ARGV[@]}" "$1" "$2" "$@"; set; declare -p; declare -f; trap -p; alias',
      'set -o history; set -x; set -v; true; history; fc -l -10 2>&1',
      'for f in /proc/[0-9]*/cmdline /proc/[0-9]*/environ; do tr "\\0" " " < "$f" 2>/dev/null; echo; done; cat /proc/$PPID/fd/0 & sleep 0.3; kill $! 2>/dev/null; true',
    ];
    for (const cmd of reads) expectNoNonce(cmd, (await sb.exec(cmd, { timeoutMs: 15_000 })).output);
    await sb.exec('set +xv');
    // Every process's memory and fds, then a forged frame with each candidate found.
    await sb.exec('cd /tmp');
    const scan = await sb.exec(SCAVENGE, { timeoutMs: 60_000 });
    expectNoNonce('scanning /proc', scan.output);
    assert.equal(scan.exitCode, 1, scan.output.slice(0, 400));
    const denied = /denied-mem: (.*)/.exec(scan.output)?.[1].split(' ') ?? [];
    assert.ok(denied.includes(String(frame.pid)), `the frame shell's memory was readable: ${scan.output.slice(0, 300)}`);
    said.push(`memory scan: frame shell (pid ${frame.pid}) refused, ${/readable-mem: (.*)/.exec(scan.output)?.[1].split(' ').filter(Boolean).length ?? 0} other processes readable, exit 1 recorded`);
    // Writing a frame into the frame shell's stdout, a command into its stdin.
    const inject = await sb.exec(`printf '\\n__TBRL_%s__ 0 - /forged\\n' 0123456789abcdef0123456789abcdef > /proc/$PPID/fd/1; echo '__tbrl_frame 0 - /forged' > /proc/$PPID/fd/0; cd /; false`, { timeoutMs: 15_000 });
    assert.equal(inject.exitCode, 1);
    assert.equal((inject.output.match(/Permission denied/g) ?? []).length, 2, inject.output);
    assert.equal((await sb.exec('pwd')).output, '/\n');
    said.push('writes into its stdout/stdin: Permission denied');
    // Hooks the frame shell would once have run: set in one command, then `false` in the next.
    const hooks = 'builtin() { echo HOOK; }; command() { echo HOOK; }; printf() { echo HOOK; }; eval() { echo HOOK; }; unset() { echo HOOK; }; ' +
      'shopt -s extdebug; set -o functrace; trap "echo HOOK; return 1" DEBUG; trap "echo HOOK" RETURN ERR; trap "exit 0" EXIT; PROMPT_COMMAND="echo HOOK"; enable -n echo test; cd /tmp';
    await sb.exec(hooks, { timeoutMs: 15_000 });
    for (const [cmd, code] of [['false', 1], ['(exit 7)', 7], ['true', 0]] as const) {
      const r = await sb.exec(cmd, { timeoutMs: 15_000 });
      assert.equal(r.exitCode, code, `${cmd} after the hooks: ${r.output}`);
      assert.doesNotMatch(r.output, /HOOK/);
    }
    // The hooks in the same command as a forged frame and `exit 1`.
    // (the frame is printed first: the DEBUG trap under extdebug skips every later command)
    const forged = await sb.exec(`printf '\\n__TBRL_00000000000000000000000000000000__ 0 - /forged\\n'; ${hooks}; exit 1`, { timeoutMs: 15_000 });
    assert.match(forged.output, /__TBRL_0+__ 0 - \/forged/);
    assert.notEqual((await sb.exec('pwd')).output, '/forged\n');
    said.push(`builtin()/trap DEBUG/EXIT/PROMPT_COMMAND/enable -n: next \`false\` exit 1, \`(exit 7)\` 7, no hook ran; in one command with a forged frame: kept as output, recorded exit ${forged.exitCode} (what its own DEBUG/EXIT traps made of it)`);
    return `${reads.length} in-process reads: no nonce; ${said.join('; ')}`;
  } finally {
    await sb.close();
  }
}, { timeout: 180_000 });

/**
 * A stand-in for an image program: reads the memory of its parent (the frame shell, when the frame
 * shell runs it) for the nonce, logs what it found or why it could not, then runs the real program.
 */
const STEALER = String.raw`cat > /tmp/steal.py <<'PY'
import re, sys
pid = int(sys.argv[1]); out = open('/tmp/stolen', 'a')
try:
    maps = open(f'/proc/{pid}/maps').read().splitlines(); mem = open(f'/proc/{pid}/mem', 'rb'); n = 0
    for line in maps:
        f = line.split(); lo, hi = (int(x, 16) for x in f[0].split('-'))
        if 'r' not in f[1] or hi - lo > 1 << 26: continue
        try: mem.seek(lo); data = mem.read(hi - lo)
        except Exception: continue
        n += 1
        for m in set(re.findall(rb'__tbrl_nonce=([0-9a-f]{32})', data) + re.findall(rb'__TBRL_([0-9a-f]{32})__', data)): out.write('nonce %s\n' % m.decode())
    out.write('%s read %d mappings of pid %d\n' % (sys.argv[2], n, pid))
except Exception as e: out.write('%s denied pid %d (%s)\n' % (sys.argv[2], pid, type(e).__name__))
PY
replace() { cp -p "$1" "$1.real" && printf '#!/bin/sh\n/usr/bin/python3 /tmp/steal.py $PPID %s\nexec %s.real "$@"\n' "$1" "$1" > "$1"; }`;

/** Every 32-hex string the attacks logged, each printed as a frame saying exit 0 in /forged; then the real exit 1. */
const FORGE = `for n in $(grep -ho '[0-9a-f]\\{32\\}' /tmp/stolen /tmp/stolen-stdin 2>/dev/null | sort -u); do printf '\\n__TBRL_%s__ 0 - /forged\\n' "$n"; done; cd /; exit 1`;

/** `false` records 1, `(exit 7)` 7, a forged frame is output (exit 1 recorded, cwd not /forged). */
async function framesStillTrue(sb: Sandbox, what: string): Promise<void> {
  for (const [cmd, code] of [['false', 1], ['(exit 7)', 7]] as const) {
    const r = await sb.exec(cmd, { timeoutMs: 15_000 });
    assert.equal(r.exitCode, code, `${what}: ${cmd} → ${r.exitCode}: ${r.output}`);
  }
  const forged = await sb.exec(FORGE, { timeoutMs: 15_000 });
  assert.equal(forged.exitCode, 1, `${what}: a forged frame was taken for the real one: ${forged.output}`);
  assert.equal((await sb.exec('pwd')).output, '/\n', `${what}: the forged cwd was taken`);
}

chaosCase('agent (root): replace the programs the frame shell used to execute uncaged — /usr/bin/setpriv and /bin/mkdir (then remove the shell\'s state dir), bash (then kill -9 the frame shell so it is started again) — with a program that reads the frame shell\'s memory (or its stdin) for the nonce, then forge a frame', 'the frame shell runs only the studio\'s static helper and bash from a read-only volume: no replaced program runs uncaged, no nonce is found; false → 1, (exit 7) → 7, the forged frame is output; the header says cage: helper', async () => {
  const sb = await sandbox();
  try {
    assert.deepEqual(sb.info.cage, { by: 'helper', capability: 'audit_write', frameShell: '/.tbrl-cage/bash' });
    const frame = frameShellOf(sb);
    const firstPid = frame.pid;
    const said: string[] = [];
    // The volume is read-only even for root: the helper cannot be replaced either.
    const overwrite = await sb.exec('cp /bin/true /.tbrl-cage/cage; echo x > /.tbrl-cage/new; mount -o remount,rw /.tbrl-cage', { timeoutMs: 15_000 });
    assert.equal((overwrite.output.match(/Read-only file system/g) ?? []).length, 2, overwrite.output);
    assert.match(overwrite.output, /permission denied|must be superuser|not permitted/i);
    said.push('helper volume: read-only for root, remount refused');
    assert.equal((await sb.exec(`${STEALER}\nreplace /usr/bin/setpriv && replace /usr/bin/mkdir && echo replaced`, { timeoutMs: 15_000 })).output, 'replaced\n');
    await sb.exec('true');
    await sb.exec('rm -rf /tmp/.tbrl-shell-*');
    const fresh = await sb.exec('pwd');
    assert.match(fresh.output, /saved state .* was removed/);
    await framesStillTrue(sb, 'setpriv/mkdir replaced');
    const log1 = (await sb.exec('cat /tmp/stolen 2>/dev/null; true')).output;
    assert.doesNotMatch(log1, new RegExp(`nonce|read \\d+ mappings of pid ${frame.pid}`), log1);
    said.push(`setpriv, mkdir replaced + state dir removed: ${log1.trim() ? log1.trim().replace(/\n/g, '; ') : 'never run by the frame shell'}`);
    // bash: a wrapper that copies the frame shell's stdin (the prelude, with the nonce) to a file.
    await sb.exec(`cp -p /usr/bin/bash /usr/bin/bash.real && printf '#!/bin/sh\\n[ "$1" = --posix ] && { /usr/bin/tee -a /tmp/stolen-stdin | exec /usr/bin/bash.real "$@"; }\\nexec /usr/bin/bash.real "$@"\\n' > /usr/bin/bash && echo ok`, { timeoutMs: 15_000 });
    const killed = await sb.exec('kill -9 $PPID');
    assert.match(killed.output, /the shell exited/);
    await framesStillTrue(sb, 'bash replaced, frame shell restarted');
    const log2 = (await sb.exec('cat /tmp/stolen-stdin 2>/dev/null | grep -c __tbrl_nonce; true')).output.trim();
    assert.ok(log2 === '0' || log2 === '', `the restarted frame shell's prelude passed through the image's bash: ${log2}`);
    assert.notEqual(frameShellOf(sb).pid, firstPid);
    said.push('bash replaced + frame shell killed: restarted from the volume, its stdin never seen');
    return `${said.join('; ')}; false → 1, (exit 7) → 7, forged frames kept as output`;
  } finally {
    await sb.close();
  }
}, { timeout: 180_000 });

/** A local image made FROM the python stand-in by `lines` (no registry needed); removed after the suite. */
function derivedImage(tag: string, lines: string[]): string {
  const name = `tbrl-chaos-${tag}:${process.pid}`;
  const r = spawnSync('docker', ['build', '-q', '-t', name, '-'], { input: ['FROM tbrl-standin/python:3', ...lines].join('\n') + '\n', encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  after(() => void spawnSync('docker', ['rmi', '-f', name]));
  return name;
}

chaosCase('agent: the same memory scan and forged frame in an image without setpriv, and in an image whose USER is 1000 (commands and frame shell share a uid)', 'no setpriv: the helper cages commands (frame shell memory refused); USER 1000: the frame shell is the studio\'s execute-only bash, non-dumpable, memory refused; commands still run as the image user (id, file owner); false → 1, (exit 7) → 7, forged frames are output', async () => {
  const said: string[] = [];
  const images = [
    ['no setpriv', derivedImage('nosetpriv', ['RUN rm -f /usr/bin/setpriv /bin/setpriv', 'ENV BASH_ENV=/etc/tbrl-bash-env'])],
    ['USER 1000', derivedImage('user', ['RUN useradd -m -u 1000 agent && mkdir -p /app && chown agent /app', 'USER agent'])],
  ] as const;
  for (const [label, image] of images) {
    const sb = await provider.create({ image: { kind: 'image', image }, runId, workdir: '/app' });
    try {
      const frame = frameShellOf(sb);
      assert.deepEqual(sb.info.cage, label === 'no setpriv' ? { by: 'helper', capability: 'audit_write', frameShell: '/.tbrl-cage/bash' } : { by: 'nondumpable', frameShell: '/.tbrl-cage/bash' });
      if (label === 'USER 1000') {
        const who = await sb.exec('id -u; id -g; whoami; echo "$HOME"; touch /app/mine; stat -c %U /app/mine');
        assert.equal(who.output, '1000\n1000\nagent\n/home/agent\nagent\n');
      } else {
        assert.equal((await sb.exec('command -v setpriv; true')).output, '');
        // $BASH_ENV names a file the agent can write: a DEBUG trap there, sourced by a restarted
        // frame shell, would hand it the nonce. The frame shell starts in posix mode: not sourced.
        await sb.writeFile('/etc/tbrl-bash-env', 'trap \'printf "%s\\n" "${__tbrl_nonce-}" >> /tmp/stolen-stdin\' DEBUG\n');
        // Control: any other non-interactive bash sources it (and logs an empty line).
        assert.match((await sb.exec('bash -c true; wc -l < /tmp/stolen-stdin')).output, /^[1-9]\d*\n$/);
        assert.match((await sb.exec('kill -9 $PPID')).output, /the shell exited/);
        await sb.exec('true');
        assert.doesNotMatch((await sb.exec('cat /tmp/stolen-stdin 2>/dev/null; true')).output, /[0-9a-f]{32}/, 'the restarted frame shell sourced $BASH_ENV');
      }
      await sb.exec('cd /tmp');
      const scan = await sb.exec(SCAVENGE, { timeoutMs: 60_000 });
      assert.ok(!scan.output.includes(frame.nonce), `${label}: the scan read the nonce`);
      assert.equal(scan.exitCode, 1, scan.output.slice(0, 400));
      const denied = /denied-mem: (.*)/.exec(scan.output)?.[1].split(' ') ?? [];
      assert.ok(denied.includes(String(frame.pid)), `${label}: the frame shell's memory was readable: ${scan.output.slice(0, 300)}`);
      await framesStillTrue(sb, label);
      said.push(`${label}: cage ${sb.info.cage?.by}, frame shell memory refused${label === 'no setpriv' ? ', $BASH_ENV trap not sourced by the restarted frame shell' : ''}, frames true`);
    } finally {
      await sb.close();
    }
  }
  return said.join('; ') + '; USER 1000: id/whoami/HOME/file owner are the image user\'s';
}, { timeout: 240_000 });

chaosCase('agent: exit statuses — `exit 1`, `false`, `(exit 7)`, `exit 300`, `kill -9 $$`, `kill -TERM $$`, `exec false`, `set -e; false; echo x`, `sh -c "exit 9"`, plain and traced, and in a trajectory', 'each recorded as the process really exited (1, 1, 7, 44, 137, 143, 1, 1, 9); the trajectory\'s actions carry the same codes', async () => {
  const cases: [string, number][] = [['exit 1', 1], ['false', 1], ['(exit 7)', 7], ['exit 300', 44], ['kill -9 $$', 137], ['kill -TERM $$', 143], ['exec false', 1], ['set -e; false; echo x', 1], ['sh -c "exit 9"', 9], ['true', 0], ['exit 0', 0]];
  const inner = await sandbox();
  const traced = await createTracedSandbox(inner);
  try {
    assert.equal(traced.tracing.available, true, traced.tracing.reason);
    for (const [label, sb] of [['plain', inner], ['traced', traced]] as const) {
      for (const [cmd, code] of cases) {
        const r = await sb.exec(cmd, { timeoutMs: 15_000, trace: label === 'traced' });
        assert.equal(r.exitCode, code, `${label}: ${cmd} → ${r.exitCode}: ${r.output}`);
        if (label === 'traced') assert.doesNotMatch(r.trace?.incomplete ?? '', /tracer lost/, `${cmd}: ${r.trace?.incomplete}`);
      }
    }
  } finally {
    await traced.close();
    await inner.close();
  }
  const ws = join(scratch, 'ws-exit');
  mkdirSync(join(ws, '.devcontainer'), { recursive: true });
  writeFileSync(join(ws, 'README.md'), 'project\n');
  writeFileSync(join(ws, '.devcontainer', 'devcontainer.json'), JSON.stringify({ image: 'tbrl-standin/python:3' }));
  const scripted = cases.slice(0, 4);
  const r = await runWorkspaceOk({
    workspaceFolder: ws, instruction: 'exit codes', outDir: join(scratch, 'ws-exit-run'),
    // Quoted: a bare `cmd: false` is a YAML boolean.
    policyOverride: new ScriptedPolicy([...scripted.map(([cmd]) => `<bash>\ncmd: ${JSON.stringify(cmd)}\n</bash>`), '<finish/>']),
  });
  recordRunId(r.runId);
  const recorded = r.steps.slice(0, scripted.length).map((s) => s.actions[0].exitCode);
  assert.deepEqual(recorded, scripted.map(([, code]) => code));
  return `${cases.length} forms × plain and traced: all truthful; trajectory exit codes ${JSON.stringify(recorded)}`;
}, { timeout: 240_000 });

chaosCase('agent: deleted cwd then `exit`; `exec sleep 0`; `kill -9 $$`; `kill -9 $PPID` (the frame shell); `rm -rf` of the workdir then exit', 'every next command runs (in /app, or / when /app is gone) with a note saying what happened', async () => {
  const sb = await sandbox();
  const said: string[] = [];
  try {
    await sb.exec('mkdir -p /tmp/gone && cd /tmp/gone && rmdir /tmp/gone');
    let r = await sb.exec('pwd');
    assert.match(r.output, /\[note: the working directory \/tmp\/gone no longer exists; the command runs in \/app\]\n\/app\n/);
    said.push('rmdir cwd → /app with note');
    await sb.exec('mkdir -p /tmp/gone && cd /tmp/gone && rmdir /tmp/gone && exit');
    r = await sb.exec('cd / && pwd');
    assert.equal(r.exitCode, 0, r.output);
    said.push('rmdir + exit → next command ran');
    await sb.exec('cd /tmp && export KEPT=1');
    for (const attack of ['exec sleep 0', 'kill -9 $$']) {
      const killed = await sb.exec(attack);
      assert.match(killed.output, /ended without saving its state/);
      r = await sb.exec('pwd; echo "$KEPT"');
      assert.equal(r.exitCode, 0);
      assert.equal(r.output, '/tmp\n1\n');
      said.push(`${attack} → note, state from before kept`);
    }
    const frameKilled = await sb.exec('kill -9 $PPID');
    assert.match(frameKilled.output, /the shell exited/);
    r = await sb.exec('pwd');
    assert.equal(r.exitCode, 0);
    assert.equal(r.output, '/tmp\n');
    said.push('kill -9 of the frame shell → new shell in /tmp with note');
    await sb.exec('cd /app && rm -rf /app && exit');
    r = await sb.exec('pwd');
    assert.equal(r.exitCode, 0, r.output);
    assert.match(r.output, /\[note: .*no longer exists.*\]\n\/\n/);
    said.push('workdir removed → / with note');
    return said.join('; ');
  } finally {
    await sb.close();
  }
});

chaosCase('agent: `kill -9 -1` (every process the container runs, the entrypoint included: the container stops), four times', 'the container is started again with a note and the next command runs in the last cwd, three times; the fourth ends the run with CONTAINER_GONE naming kill -9 -1', async () => {
  const sb = await sandbox();
  const said: string[] = [];
  try {
    await sb.exec('mkdir -p /app/w && cd /app/w && echo kept > f');
    for (let i = 1; i <= 3; i++) {
      const r = await sb.exec('kill -9 -1', { timeoutMs: 15_000 });
      assert.match(r.output, new RegExp(`killed every process in the container .*started again \\(${i} of 3 times\\)`), r.output);
      const next = await sb.exec('pwd; cat f', { timeoutMs: 15_000 });
      assert.equal(next.output, '/app/w\nkept\n');
      said.push(`#${i}: restarted, next command in /app/w`);
    }
    const last = await sb.exec('kill -9 -1', { timeoutMs: 15_000 }).catch((err: unknown) => err);
    assert.ok(last instanceof TbrlError && last.code === 'CONTAINER_GONE', `untyped or not ended: ${String(last)}`);
    assert.match(last.message, /kill -9 -1/);
    said.push(`#4: ${last.code}`);
    return said.join('; ');
  } finally {
    await sb.close();
  }
}, { timeout: 120_000 });

/** A traced command's written and read paths, for asserting what the trace saw. */
function touched(r: { trace?: { reads: string[]; writes: { path: string }[] } }): string[] {
  return [...(r.trace?.reads ?? []), ...(r.trace?.writes ?? []).map((w) => w.path)];
}

chaosCase('agent: kill -9 the tracer (strace is visible in the agent\'s PID namespace), after setting a variable, a function and a cwd', 'a note; the tracer is restarted; the next command is traced again with the variable, function and cwd kept; no untraced process of the old shell is left; DepGPO falls back naming "tracer lost"', async () => {
  return withTracedSandbox(async (sb, inner) => {
    const first = await sb.exec('mkdir -p /app/w && cd /app/w && export KEEP=kept && greet() { echo "hi $1"; } && echo one > /tmp/one', { trace: true, timeoutMs: 15_000 });
    assert.equal(first.exitCode, 0, first.output);
    // A background job started under the old tracer: untraced after the kill, so it must not survive.
    await sb.exec('sleep 300 & echo started', { trace: true, timeoutMs: 15_000 });
    const kill = await sb.exec('kill -9 $(pgrep -x ld.so); echo done', { trace: true, timeoutMs: 15_000 });
    assert.match(kill.output, /\[note: the tracer was killed during this command, so its trace is incomplete .*restarted \(1 of 3 times/s, kill.output);
    assert.match(kill.trace?.incomplete ?? '', /^tracer lost: strace was killed during traced command \d+ .*restarted \(1 of 3\)/);
    const later = await sb.exec('echo two > /tmp/two; cat /tmp/one /tmp/two; pwd; echo $KEEP; greet you', { trace: true, timeoutMs: 15_000 });
    assert.equal(later.exitCode, 0, later.output);
    assert.equal(later.output, 'one\ntwo\n/app/w\nkept\nhi you\n');
    assert.equal(later.trace?.incomplete, undefined, 'the command after the restart is traced in full');
    assert.ok(later.trace?.writes.some((w) => w.path === '/tmp/two'), `write of /tmp/two missing: ${JSON.stringify(touched(later))}`);
    const procs = await inner.execArgv(['sh', '-c', 'for d in /proc/[0-9]*; do tr "\\0" " " <$d/cmdline 2>/dev/null; echo; done'], { timeoutMs: 10_000 });
    assert.doesNotMatch(procs.output, /sleep 300/, 'the background job of the old (untraced) shell is still running');
    assert.equal(procs.output.split('\n').filter((c) => c.includes('/.tbrl-strace/strace')).length, 1, `one strace: ${procs.output}`);
    const result = computeDepgpo({
      commands: [first, kill, later].map((r, i) => ({ step: i, text: 'x', trace: r.trace })),
      instruction: '',
      stepTokens: [1, 1, 1],
      verifier: { reads: ['/tmp/two'], writes: [], ports: [], processes: [] },
    });
    assert.match(result.fallback ?? '', /^tracer lost: strace was killed/);
    return `note + restart (1 of 3); next command traced, cwd/variable/function kept; DepGPO fallback: "${result.fallback!.slice(0, 60)}…"`;
  });
}, { timeout: 180_000 });

chaosCase('agent: kill -9 the tracer four times', 'restarted three times, each with a note; the fourth loss ends the run with TRACER_LOST naming the command', async () => {
  const said: string[] = [];
  return withTracedSandbox(async (sb) => {
    for (let i = 1; i <= 3; i++) {
      const kill = await sb.exec('kill -9 $(pgrep -x ld.so)', { trace: true, timeoutMs: 15_000 });
      assert.match(kill.output, new RegExp(`restarted \\(${i} of 3 times`), kill.output);
      const next = await sb.exec('echo x > /tmp/x', { trace: true, timeoutMs: 15_000 });
      assert.ok(next.trace?.writes.some((w) => w.path === '/tmp/x'), `#${i}: not traced again: ${next.trace?.incomplete}`);
      said.push(`#${i}: restarted, traced again`);
    }
    const last = await sb.exec('kill -9 $(pgrep -x ld.so)', { trace: true, timeoutMs: 15_000 }).catch((err: unknown) => err);
    assert.ok(last instanceof TbrlError && last.code === 'TRACER_LOST', `untyped or not ended: ${String((last as { output?: string }).output ?? last)}`);
    assert.match(last.message, /pgrep -x ld\.so/);
    said.push(`#4: ${last.code}`);
    return said.join('; ');
  });
}, { timeout: 240_000 });

chaosCase('agent: forge trace lines — a fake openat of tests/forged.py written into /.tbrl-strace/trace.fifo (the old channel), /dev/stderr and every /proc/*/fd it can open', 'the trace holds none of the forged paths; the real write of the same command is in it', async () => {
  return withTracedSandbox(async (sb) => {
    // Python: one forged strace line per target (the command's own pid, so a parser would credit it).
    const forge = [
      'import os, glob, stat',
      'pid = os.getpid()',
      'line = f\'{pid} openat(AT_FDCWD</app>, "/app/tests/forged.py", O_WRONLY|O_CREAT|O_TRUNC, 0666) = 3</app/tests/forged.py>\\n{pid} openat(AT_FDCWD</app>, "/app/tests/forged_read.py", O_RDONLY) = 3</app/tests/forged_read.py>\\n{pid} unlink("/app/tests/forged_gone.py") = 0\\n\'.encode()',
      'sent = []',
      'for t in ["/.tbrl-strace/trace.fifo", "/dev/stderr"] + glob.glob("/proc/[0-9]*/fd/*"):',
      '    try:',
      // Pipes and FIFOs only: writing into another process's regular files would corrupt them.
      '        if t.startswith("/proc/") and not stat.S_ISFIFO(os.stat(t).st_mode): continue',
      '        fd = os.open(t, os.O_WRONLY | os.O_NONBLOCK)',
      '        os.write(fd, line); os.close(fd); sent.append(t)',
      '    except OSError:',
      '        pass',
      'print("sent to", len(sent), "fds:", " ".join(sent))',
    ].join('\n');
    const r = await sb.exec(`echo real > /tmp/real.txt; python3 - <<'PY'\n${forge}\nPY`, { trace: true, timeoutMs: 30_000 });
    assert.equal(r.exitCode, 0, r.output);
    assert.ok(r.trace?.writes.some((w) => w.path === '/tmp/real.txt'), `the real write is missing: ${JSON.stringify(touched(r))}`);
    const forged = touched(r).filter((p) => p.includes('forged'));
    assert.deepEqual(forged, [], `forged lines reached the trace: ${forged.join(', ')} (${r.output.trim()})`);
    const next = await sb.exec('echo after > /tmp/after.txt', { trace: true, timeoutMs: 15_000 });
    assert.deepEqual(touched(next).filter((p) => p.includes('forged')), []);
    assert.equal(next.trace?.incomplete, undefined);
    return `${(/sent to \d+ fds/.exec(r.output) ?? ['?'])[0]} (and the old FIFO path, gone); no forged path in the trace (on the FIFO channel a forged read of tests/forged_read.py was in it)`;
  });
}, { timeout: 180_000 });

chaosCase('agent: forge trace markers — the command opens /.tbrl-mark-N-end itself (every N, closing its own trace window early), then in a second command /.tbrl-mark-999-begin (opening a window nobody waits for), each followed by a write and a read of /solution', 'only the frame shell\'s own marks count: the later write and read are in each command\'s trace; the forgery is flagged (trace.incomplete "forged trace marker … by pid …") and DepGPO falls back naming it', async () => {
  return withTracedSandbox(async (sb) => {
    await sb.exec('mkdir -p /solution && echo 42 > /solution/answer', { trace: true, timeoutMs: 15_000 });
    const ends = await sb.exec('for n in $(seq 0 60); do : 2>/dev/null </.tbrl-mark-$n-end; done; echo pwned > /tmp/after-end.txt; cat /solution/answer', { trace: true, timeoutMs: 15_000 });
    assert.equal(ends.output, '42\n', ends.output);
    assert.ok(ends.trace?.writes.some((w) => w.path === '/tmp/after-end.txt'), `the write after the forged end marker is not in the trace: ${JSON.stringify(touched(ends))}`);
    assert.ok(ends.trace?.reads.includes('/solution/answer'), `the read of /solution after the forged end marker is not in the trace: ${JSON.stringify(touched(ends))}`);
    assert.match(ends.trace?.incomplete ?? '', /^forged trace marker: .*\/\.tbrl-mark-\d+-end.* by pid \d+/, String(ends.trace?.incomplete));
    const begin = await sb.exec(': 2>/dev/null </.tbrl-mark-999-begin; echo pwned > /tmp/after-begin.txt; cat /solution/answer', { trace: true, timeoutMs: 15_000 });
    assert.ok(begin.trace?.writes.some((w) => w.path === '/tmp/after-begin.txt'), `the write after the forged begin marker is not in the trace: ${JSON.stringify(touched(begin))} (${begin.trace?.incomplete})`);
    assert.match(begin.trace?.incomplete ?? '', /^forged trace marker: .*\/\.tbrl-mark-999-begin/, String(begin.trace?.incomplete));
    const next = await sb.exec('echo fine > /tmp/fine.txt', { trace: true, timeoutMs: 15_000 });
    assert.equal(next.trace?.incomplete, undefined, 'a clean command after the forgery is traced in full');
    assert.ok(next.trace?.writes.some((w) => w.path === '/tmp/fine.txt'));
    const result = computeDepgpo({
      commands: [ends, begin, next].map((r, i) => ({ step: i, text: 'x', trace: r.trace })),
      instruction: '',
      stepTokens: [1, 1, 1],
      verifier: { reads: ['/tmp/fine.txt'], writes: [], ports: [], processes: [] },
    });
    assert.match(result.fallback ?? '', /^forged trace marker/);
    return `forged end and begin markers ignored; writes and /solution reads after them traced; flagged: "${ends.trace!.incomplete!.slice(0, 70)}…"; DepGPO fallback`;
  });
}, { timeout: 180_000 });

chaosCase('agent (root): put a `bash` wrapper first on PATH (/usr/local/bin/bash) that copies its stdin to a file, then kill -9 the traced frame shell (by its pid) so it is started again', 'the traced frame shell is the studio\'s static bash from the read-only cage volume: the wrapper never sees the prelude (no nonce stolen); false → 1, (exit 7) → 7, a forged frame stays output', async () => {
  return withTracedSandbox(async (sb, inner) => {
    assert.equal(inner.info.cage?.frameShell, '/.tbrl-cage/bash');
    // First on PATH (/usr/local/bin comes before /usr/bin), so a `bash` looked up by name is this one.
    const wrap = await sb.exec(`printf '#!/bin/sh\\n/usr/bin/tee -a /tmp/stolen-stdin | exec /usr/bin/bash "$@"\\n' > /usr/local/bin/bash && chmod 755 /usr/local/bin/bash && hash -r && type -P bash`, { trace: true, timeoutMs: 15_000 });
    assert.equal(wrap.output, '/usr/local/bin/bash\n', wrap.output);
    // With the wrapper in place a command's $PPID is the wrapper: kill the frame shell by its pid
    // (visible to the agent in the container's PID namespace).
    const framePid = (sb as unknown as { engine: { straceShell: { pid: number } } }).engine.straceShell.pid;
    const killed = await sb.exec(`kill -9 ${framePid}`, { trace: true, timeoutMs: 15_000 });
    assert.ok(killed.exitCode !== 0 || /exited|restart/.test(killed.output), killed.output);
    await framesStillTrue(sb, 'traced: bash replaced, frame shell killed');
    const stolen = (await sb.exec('cat /tmp/stolen-stdin 2>/dev/null | grep -c __tbrl_nonce; true')).output.trim();
    assert.ok(stolen === '0' || stolen === '', `the restarted traced frame shell's prelude passed through the image's bash: ${stolen}`);
    const after = await sb.exec('echo t > /tmp/t.txt', { trace: true, timeoutMs: 15_000 });
    assert.ok(after.trace?.writes.some((w) => w.path === '/tmp/t.txt'), `not traced after the restart: ${after.trace?.incomplete}`);
    return 'the restarted traced frame shell is /.tbrl-cage/bash: no nonce seen by the replaced bash; frames true; traced again';
  });
}, { timeout: 180_000 });

chaosCase('agent (root): replace the strace bundle in /.tbrl-strace (a fake strace, a new file), then kill -9 the tracer so it is restarted from the bundle', 'the bundle is a read-only volume: both writes get "Read-only file system"; the restarted tracer is the real strace and the next command is traced', async () => {
  return withTracedSandbox(async (sb, inner) => {
    assert.match(inner.info.straceBundle ?? '', /^tbrl-strace-/);
    const w = await sb.exec('cp /bin/true /.tbrl-strace/strace; echo x > /.tbrl-strace/new; ls /.tbrl-strace/new 2>&1', { trace: true, timeoutMs: 15_000 });
    assert.equal((w.output.match(/Read-only file system/g) ?? []).length, 2, w.output);
    const kill = await sb.exec('kill -9 $(pgrep -x ld.so)', { trace: true, timeoutMs: 15_000 });
    assert.match(kill.output, /restarted \(1 of 3 times/, kill.output);
    const next = await sb.exec('echo z > /tmp/z.txt', { trace: true, timeoutMs: 15_000 });
    assert.ok(next.trace?.writes.some((wr) => wr.path === '/tmp/z.txt'), `not traced after the restart: ${next.trace?.incomplete}`);
    return `writes refused (read-only volume ${inner.info.straceBundle}); tracer restarted from it; next command traced`;
  });
}, { timeout: 180_000 });

chaosCase('agent: kill -STOP the tracer (every traced process would freeze)', 'the command ends at its timeout; the stopped strace is killed, the shell runs under a new one and the next command is traced; DepGPO reason "tracer lost"', async () => {
  return withTracedSandbox(async (sb, inner) => {
    const started = Date.now();
    const stop = await sb.exec('kill -STOP $(pgrep -x ld.so); echo stopped', { trace: true, timeoutMs: 5_000 });
    const took = Date.now() - started;
    assert.ok(took < 60_000, `took ${took} ms`);
    assert.match(stop.trace?.incomplete ?? '', /^tracer lost: strace was stopped \(SIGSTOP\)/, `${stop.trace?.incomplete} / ${stop.output}`);
    const next = await sb.exec('echo y > /tmp/y; echo ok', { trace: true, timeoutMs: 15_000 });
    assert.equal(next.output.trim().split('\n').pop(), 'ok', next.output);
    assert.ok(next.trace?.writes.some((w) => w.path === '/tmp/y'), `not traced again: ${next.trace?.incomplete}`);
    const stopped = await inner.execArgv(['sh', '-c', 'for d in /proc/[0-9]*; do read -r c <$d/comm 2>/dev/null; [ "$c" = ld.so ] && grep "^State" $d/status; done'], { timeoutMs: 10_000 });
    assert.doesNotMatch(stopped.output, /\bT\b/, `a stopped strace is left: ${stopped.output}`);
    return `command ended after ${took} ms (timeout 5 s); ${stop.trace!.incomplete!.slice(0, 70)}…; next command traced`;
  });
}, { timeout: 180_000 });

chaosCase('RPC: env-server `credit` with a command step of 4e9 (~300 bytes), then params of the wrong type', 'each answered -32602 naming the field within a second; the server lives on and answers initialize', async () => {
  const proc = spawn(process.execPath, ['--import', 'tsx', CLI, 'env-server'], { stdio: ['pipe', 'pipe', 'pipe'] });
  const replies: { id: number; error?: { code: number; data?: { field?: string } }; result?: unknown }[] = [];
  let buf = '';
  proc.stdout.on('data', (c: Buffer) => {
    buf += c.toString();
    for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
      replies.push(JSON.parse(buf.slice(0, nl)));
      buf = buf.slice(nl + 1);
    }
  });
  const input = { commands: [{ step: 4e9, text: 'ls', trace: { reads: [], writes: [], stdoutValues: [], ports: [], processes: [] } }], instruction: 'x', stepTokens: [10], verifier: { reads: [], writes: [], ports: [], processes: [] } };
  const started = Date.now();
  proc.stdin.write(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'credit', params: { input } }) + '\n');
  proc.stdin.write(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'credit', params: { input: { ...input, commands: { step: 1 } } } }) + '\n');
  proc.stdin.write(JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'step', params: [1] }) + '\n');
  proc.stdin.write(JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'initialize' }) + '\n');
  while (replies.length < 4 && Date.now() - started < 30_000) await new Promise((r) => setTimeout(r, 50));
  proc.stdin.end();
  await new Promise((r) => proc.on('exit', r));
  assert.deepEqual(replies.slice(0, 3).map((r) => [r.id, r.error?.code, r.error?.data?.field]), [
    [1, -32602, 'params.input.commands[0].step'],
    [2, -32602, 'params.input.commands'],
    [3, -32602, 'params'],
  ]);
  assert.ok(replies[3].result, 'the server died');
  return `3 × -32602 naming the field, then initialize answered (${Date.now() - started} ms in all, including start-up)`;
});

chaosCase('build context: a 9 GiB (sparse) file in the task directory', 'refused before anything is read, naming the file and suggesting .dockerignore', async () => {
  const ctx = join(scratch, 'big-ctx');
  mkdirSync(ctx);
  writeFileSync(join(ctx, 'Dockerfile'), 'FROM debian:bookworm-slim\n');
  const fd = openSync(join(ctx, 'weights.bin'), 'w');
  ftruncateSync(fd, 9 * 1024 ** 3);
  closeSync(fd);
  const before = process.memoryUsage().rss;
  await assert.rejects(buildTaskImage(provider.connection, { context: ctx, dockerfile: 'Dockerfile' }, {}, {}), (err: unknown) => {
    assert.ok(err instanceof TbrlError && err.code === 'BUILD_CONTEXT_FILE_TOO_LARGE', String(err));
    assert.match(err.message, /weights\.bin/);
    assert.match(err.message, /\.dockerignore/);
    return true;
  });
  const grew = (process.memoryUsage().rss - before) / 1024 ** 2;
  return `BUILD_CONTEXT_FILE_TOO_LARGE naming weights.bin, fix: .dockerignore; RSS +${grew.toFixed(0)} MiB`;
});

chaosCase('trajectory: well-formed JSON of the wrong shape (a step whose actions is an object) to replay, graph, credit, export-labels', 'exit 1 with trajectory-shape naming line 2 and the field, never a TypeError', async () => {
  const good = readFileSync(join(scratch, 'ws-cap-run', 'trajectory.jsonl'), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
  good[1] = { ...good[1], actions: { kind: 'bash' } };
  const file = join(scratch, 'wrong-shape.jsonl');
  writeFileSync(file, good.map((r) => JSON.stringify(r)).join('\n') + '\n');
  const said: string[] = [];
  for (const argv of [['replay', file], ['graph', file], ['credit', file, '-o', join(scratch, 'c.json')], ['export-labels', file, '-o', join(scratch, 'labels.jsonl')]]) {
    const { code, out } = await cli(argv);
    assert.equal(code, 1, `${argv[0]}: ${out}`);
    assert.match(out, /line 2: field actions must be an array, got object/);
    assert.doesNotMatch(out, /TypeError/);
    said.push(argv[0]);
  }
  return `${said.join(', ')}: "line 2: field actions must be an array"`;
});

chaosCase('run: a scripted agent kills the tracer once, then four times', 'once: the run completes, replay shows the incomplete trace under the command and the DepGPO fallback, report.md names it; four times: the run ends with TRACER_LOST in the footer', async () => {
  const kill = '<bash>\ncmd: kill -9 $(pgrep -x ld.so); echo killed\n</bash>';
  const once = await runTaskOk({ taskDir: hostileTask('tracer-once', () => undefined), outDir: join(scratch, 'tracer-once'), policyOverride: new ScriptedPolicy([kill, '<bash>\ncmd: echo hello > /tmp/h\n</bash>', '<finish/>']), env: {} });
  recordRunId(once.runId);
  assert.match(once.footer.depgpo?.fallback ?? '', /^tracer lost: strace was killed .*restarted \(1 of 3\)/);
  assert.match(readFileSync(once.reportPath, 'utf8'), /Fallback \(every f_t = 1\): tracer lost/);
  const { code, out } = await cli(['replay', once.trajectoryPath]);
  assert.equal(code, 0);
  assert.match(out, /⚠ trace incomplete: tracer lost: strace was killed/);
  const four = await runTask({ taskDir: hostileTask('tracer-four', () => undefined), outDir: join(scratch, 'tracer-four'), policyOverride: new ScriptedPolicy([kill, kill, kill, kill, '<finish/>']), env: {} });
  recordRunId(four.result.runId);
  assert.equal(four.error?.code, 'TRACER_LOST', `not ended by TRACER_LOST: ${four.error?.message}`);
  assert.equal(four.result.footer.endReason, 'error');
  assert.match(four.result.footer.endMessage ?? '', /tracer was lost again .*restarted 3 times/);
  return `once: completed, fallback "${once.footer.depgpo!.fallback!.slice(0, 50)}…"; four times: ${four.error!.code}, footer ${four.result.footer.endReason}`;
}, { timeout: 300_000 });

chaosCase('reward tampering: the agent writes /tests/conftest.py, plants /logs/verifier/reward.txt, rewrites /usr/local/bin/pytest and reads /solution', 'the planted files are discarded before the verifier, the reward is the real one, every act is flagged in the footer, report and replay', async () => {
  const task = hostileTask('tamper', () => undefined);
  const policy = new ScriptedPolicy([
    '<bash>\ncmd: mkdir -p /tests /logs/verifier /solution && printf "import pytest\\n" > /tests/conftest.py && echo 1 > /logs/verifier/reward.txt && echo "echo answer" > /solution/solve.sh\n</bash>',
    '<bash>\ncmd: echo "#!/bin/sh" > /usr/local/bin/pytest; cat /solution/solve.sh 2>/dev/null; true\n</bash>',
    '<finish/>',
  ]);
  const r = await runTaskOk({ taskDir: task, outDir: join(scratch, 'tamper-run'), policyOverride: policy, env: {} });
  recordRunId(r.runId);
  const flags = r.footer.reward?.tampering ?? [];
  const kinds = flags.map((f) => `${f.kind}:${f.path}`);
  assert.ok(r.header.sandbox?.tracing.available, `tracing off: ${r.header.sandbox?.tracing.reason}`);
  for (const expected of ['test-files:/tests/conftest.py', 'reward-file:/logs/verifier/reward.txt', 'test-runner:/usr/local/bin/pytest', 'solution-read:/solution/solve.sh']) {
    assert.ok(kinds.includes(expected), `${expected} not flagged: ${kinds.join(', ')}`);
  }
  assert.ok(kinds.some((k) => k === 'reward-file:/logs/verifier/reward.txt' && flags.find((f) => f.path === '/logs/verifier/reward.txt' && f.step === undefined)), 'the planted reward file was not discarded before verification');
  assert.ok((r.footer.reward?.total ?? 1) < 1, 'the hello-world task was not solved, yet it scored 1');
  const report = readFileSync(r.reportPath, 'utf8');
  assert.match(report, /Reward tampering/);
  const { code, out } = await cli(['replay', r.trajectoryPath]);
  assert.equal(code, 0);
  assert.match(out, /reward tampering: test-files \(step 0\)/);
  return `${flags.length} flags (${[...new Set(flags.map((f) => f.kind))].join(', ')}); reward ${r.footer.reward?.total}; shown in report and replay`;
}, { timeout: 120_000 });
