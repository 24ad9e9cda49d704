/**
 * How the host gates start processes and copy workspaces (issue #20) must not change what a program
 * sees or what a copy holds:
 *
 * 1. The spawner (spawner.ts) gives a program what Node's spawn gives it — argv, cwd, environment and
 *    PATH lookup, stdin on /dev/null, stdout and stderr, exit status, code null when killed by a
 *    signal or at the timeout, an error for a program that does not exist — and its runs match
 *    runProcess's on each case.
 * 2. copyTree (host.ts) leaves the same tree as fs.cp: files, modes, nested and empty directories,
 *    symlinks verbatim; a FIFO goes to fs.cp. removeTree removes what fs.rm does.
 * 3. The gate server's code cache (gate-server.ts): a script whose bytes change is run as changed,
 *    and the same bytes run from another path report that path (tracebacks, __file__), as the real
 *    interpreter does. (Absolute script paths, as the gates run every script: for a relative one the
 *    server's runpy gives a relative __file__ where python3 since 3.9 gives an absolute one.)
 * 4. Shared pipeline runs (gate-server.ts run_plan): a `bash ENTRY INPUT_DIR OUTPUT_DIR` run is answered
 *    with an earlier run's output only when the entry's directory tree, the input tree, the environment
 *    (scope included) are byte-identical and the output directory is empty; a different input byte, a
 *    changed pipeline, another variable or scope, output that is not /dev/null, a run that changed its
 *    own tree or named its paths in its output all run for real, with the result a real run gives.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { cp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { closeGatePythons, sharedGatePython } from '../../src/core/synth/gates';
import { copyTree, memoryScratchBase, removeTree, runProcess, treeImage, writeTreeImage } from '../../src/core/synth/host';
import { startSpawner } from '../../src/core/synth/spawner';

const scratch = mkdtempSync(join(tmpdir(), 'tbrl-host-io-test-'));
after(async () => {
  await closeGatePythons();
  rmSync(scratch, { recursive: true, force: true });
});

const real = spawnSync('python3', ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8' }).stdout.trim();

describe('the gates\' process spawner', () => {
  it('runs programs as Node\'s spawn does', async () => {
    const spawner = startSpawner(real, runProcess);
    try {
      mkdirSync(join(scratch, 'bin'), { recursive: true });
      writeFileSync(join(scratch, 'bin', 'gate-echo'), '#!/bin/bash\necho "$0 $# $*"; pwd; echo "x=$GATE_X" >&2; cat; exit 3\n');
      chmodSync(join(scratch, 'bin', 'gate-echo'), 0o755);
      const cases: { argv: string[]; cwd?: string; env?: Record<string, string>; timeoutMs?: number }[] = [
        { argv: ['gate-echo', 'a b', ''], cwd: scratch, env: { PATH: `${join(scratch, 'bin')}:${process.env.PATH}`, GATE_X: 'y' } },
        { argv: ['bash', '-c', 'printf "\\xe2\\x82"; printf "\\xac\\n"; echo err >&2; exit 0'] },
        { argv: ['bash', '-c', 'trap "" PIPE; kill -TERM $$'] },
        { argv: ['bash', '-c', 'kill -PIPE $$'] },
        { argv: ['bash', '-c', 'echo started; sleep 5'], timeoutMs: 300 },
        { argv: ['python3', '-c', 'import signal,sys; print([signal.getsignal(s) == signal.SIG_DFL for s in (signal.SIGPIPE, signal.SIGINT, signal.SIGXFSZ)], sys.stdin.read() == "")'] },
        { argv: ['bash', '-c', 'for f in 0 1 2; do readlink /proc/$$/fd/$f | sed "s/:.*//"; done'] },
        { argv: ['bash', '-c', 'echo "$TBRL_NOT_SET-$HOME"'] },
      ];
      for (const c of cases) {
        const viaNode = await runProcess(c.argv, c);
        const viaSpawner = await spawner.run(c.argv, c);
        assert.deepEqual(viaSpawner, viaNode, c.argv.join(' '));
      }
      const missing = await spawner.run(['tbrl-no-such-program']);
      assert.equal(missing.code, null);
      assert.match(missing.stderr, /tbrl-no-such-program.*(ENOENT|No such file)/);
      const runs = await Promise.all(Array.from({ length: 8 }, (_, i) => spawner.run(['bash', '-c', `sleep 0.0${i}; echo ${i}`])));
      assert.deepEqual(runs.map((r) => r.stdout), Array.from({ length: 8 }, (_, i) => `${i}\n`), 'concurrent runs get their own answers');
    } finally {
      spawner.close();
    }
  });

  it('hands the gate server\'s python3 requests over itself with the result its client gives', async () => {
    const server = await sharedGatePython();
    assert.ok(server.run && server.handedOver, 'the warm gate server has a spawner');
    const pidFile = join(scratch, 'sleeper.pid');
    const cases: { argv: string[]; cwd?: string; timeoutMs?: number; discardOutput?: boolean }[] = [
      { argv: ['python3', '-c', 'import os,sys; print(sys.argv, os.getcwd(), sys.stdin.read() == ""); print("err", file=sys.stderr); sys.exit(3)', 'a b'], cwd: scratch },
      { argv: ['python3', '-c', 'import os,signal; os.kill(os.getpid(), signal.SIGTERM)'] },
      { argv: ['python3', '-c', 'import sys; sys.stdout.write("y" * 300000); sys.stderr.write("z" * 70000)'] },
      { argv: ['python3', '-c', 'print("dropped")'], discardOutput: true },
      { argv: ['python3', '-m', 'json.tool', '--no-such-option'] },
      { argv: ['python3', join(scratch, 'no-such-script.py')] },
      // Not handed over (the client execs the real interpreter): the same either way.
      { argv: ['python3', '-u', '-c', 'print(1)'] },
    ];
    const before = server.handedOver();
    for (const c of cases) {
      const o = { ...c, env: server.env };
      assert.deepEqual(await server.run(c.argv, o), await server.run(c.argv, { ...o, direct: false }), c.argv.join(' '));
    }
    assert.equal(server.handedOver() - before, cases.length - 1, 'every case but python3 -u went to the server without a client');
    // At the timeout the program itself is killed, as when its client is killed.
    const slept = await server.run(['python3', '-c', `import os,time; open(${JSON.stringify(pidFile)}, "w").write(str(os.getpid())); time.sleep(30)`], { env: server.env, timeoutMs: 500 });
    assert.equal(slept.code, null);
    const pid = Number(readFileSync(pidFile, 'utf8'));
    const deadline = Date.now() + 5000;
    const alive = () => { try { process.kill(pid, 0); return !/^\S+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8')); } catch { return false; } };
    while (alive() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(alive(), false, 'the program outlived its timeout');
  });

  it('falls back to Node\'s spawn when the helper is gone', async () => {
    const spawner = startSpawner(real, runProcess);
    spawner.close();
    const r = await spawner.run(['bash', '-c', 'echo still']);
    assert.deepEqual(r, { code: 0, stdout: 'still\n', stderr: '' });
    const never = startSpawner(join(scratch, 'no-python'), runProcess);
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.deepEqual(await never.run(['bash', '-c', 'echo fallback']), { code: 0, stdout: 'fallback\n', stderr: '' });
  });
});

describe('copyTree', () => {
  const listing = (root: string): string[] => {
    const out: string[] = [];
    const walk = (rel: string) => {
      for (const name of readdirSync(join(root, rel)).sort()) {
        const p = join(rel, name);
        const st = lstatSync(join(root, p));
        const what = st.isSymbolicLink() ? `link ${readlinkSync(join(root, p))}` : st.isDirectory() ? 'dir' : `file ${readFileSync(join(root, p), 'base64')}`;
        out.push(`${p} ${(st.mode & 0o7777).toString(8)} ${what}`);
        if (st.isDirectory()) walk(p);
      }
    };
    walk('');
    return [`. ${(lstatSync(root).mode & 0o7777).toString(8)}`, ...out];
  };

  it('leaves what fs.cp leaves', async () => {
    const src = join(scratch, 'tree');
    mkdirSync(join(src, 'app', 'data', 'deep', 'er'), { recursive: true });
    mkdirSync(join(src, 'app', 'empty'));
    writeFileSync(join(src, 'app', 'pipeline.sh'), '#!/bin/bash\n');
    chmodSync(join(src, 'app', 'pipeline.sh'), 0o755);
    writeFileSync(join(src, 'app', 'data', 'deep', 'er', 'x.bin'), Buffer.from([0, 1, 2, 255]));
    writeFileSync(join(src, 'app', 'data', 'ro.csv'), 'a,b\n');
    chmodSync(join(src, 'app', 'data', 'ro.csv'), 0o444);
    chmodSync(join(src, 'app', 'empty'), 0o700);
    symlinkSync('../data/ro.csv', join(src, 'app', 'empty', 'rel-link'));
    symlinkSync('/nonexistent/target', join(src, 'app', 'dangling'));
    const viaCp = join(scratch, 'via-cp');
    const viaTree = join(scratch, 'via-tree');
    await cp(src, viaCp, { recursive: true, verbatimSymlinks: true });
    await copyTree(src, viaTree);
    assert.deepEqual(listing(viaTree), listing(viaCp));
    assert.ok(listing(viaTree).length > 8);
    // A FIFO is fs.cp's to handle (it refuses it): the same error either way.
    execFileSync('mkfifo', [join(src, 'app', 'fifo')]);
    const errorOf = (p: Promise<void>) => p.then(() => 'copied', (e: NodeJS.ErrnoException) => e.code ?? String(e));
    assert.equal(await errorOf(copyTree(src, join(scratch, 'fifo-tree'))), await errorOf(cp(src, join(scratch, 'fifo-cp'), { recursive: true, verbatimSymlinks: true })));
  });

  it('a tree image writes what copyTree wrote when the image was read, whatever the umask', async () => {
    const src = join(scratch, 'tree');
    const image = treeImage(src);
    assert.equal(image, undefined, 'a FIFO in the tree (previous test) is left to copyTree / fs.cp');
    rmSync(join(src, 'app', 'fifo'));
    const viaTree = join(scratch, 'image-via-tree');
    await copyTree(src, viaTree);
    const snapshot = treeImage(src);
    assert.ok(snapshot);
    // Changing the source after the image is read does not change what the image writes.
    writeFileSync(join(src, 'app', 'data', 'later.csv'), 'x\n');
    const old = process.umask(0o077);
    try {
      await writeTreeImage(snapshot, join(scratch, 'image-a'));
    } finally {
      process.umask(old);
    }
    await writeTreeImage(snapshot, join(scratch, 'image-b'));
    assert.deepEqual(listing(join(scratch, 'image-a')), listing(viaTree));
    assert.deepEqual(listing(join(scratch, 'image-b')), listing(viaTree));
    rmSync(join(src, 'app', 'data', 'later.csv'));
  });

  it('removeTree removes what fs.rm removes, never a symlink\'s target', async () => {
    const keep = join(scratch, 'keep');
    mkdirSync(keep, { recursive: true });
    writeFileSync(join(keep, 'kept.txt'), 'x');
    const doomed = join(scratch, 'doomed');
    await copyTree(join(scratch, 'via-cp'), doomed);
    symlinkSync(keep, join(doomed, 'app', 'to-keep'));
    chmodSync(join(doomed, 'app', 'empty'), 0o500);
    await removeTree(doomed);
    assert.equal(lstatSync(doomed, { throwIfNoEntry: false }), undefined);
    assert.equal(readFileSync(join(keep, 'kept.txt'), 'utf8'), 'x');
    await removeTree(doomed);
    writeFileSync(join(scratch, 'a-file'), 'x');
    await removeTree(join(scratch, 'a-file'));
    assert.equal(lstatSync(join(scratch, 'a-file'), { throwIfNoEntry: false }), undefined);
  });

  it('has a memory scratch base where /dev/shm is an exec-able tmpfs', () => {
    const mounts = readFileSync('/proc/mounts', 'utf8').split('\n').map((l) => l.split(' ')).filter((f) => f[1] === '/dev/shm');
    const usable = mounts.length > 0 && mounts[mounts.length - 1][2] === 'tmpfs' && !mounts[mounts.length - 1][3].split(',').includes('noexec');
    const base = memoryScratchBase();
    if (usable) {
      assert.ok(base?.startsWith('/dev/shm/tbrl-gates-'), String(base));
      writeFileSync(join(base!, 'x.sh'), '#!/bin/sh\necho ran\n');
      chmodSync(join(base!, 'x.sh'), 0o755);
      assert.equal(execFileSync(join(base!, 'x.sh'), { encoding: 'utf8' }), 'ran\n');
    } else assert.equal(base, undefined);
  });
});

describe('the gate server\'s code cache', () => {
  it('runs a changed script as changed, and the same script at another path under that path', async () => {
    const server = await sharedGatePython();
    assert.equal(server.mode, 'warm');
    const dirs = [join(scratch, 'one'), join(scratch, 'two', 'deeper')];
    for (const d of dirs) mkdirSync(d, { recursive: true });
    const body = (n: number) => `import sys\nprint(${n}, __file__, sys.argv[0])\ndef f():\n    raise ValueError("in f")\nif len(sys.argv) > 1:\n    f()\n`;
    const runBoth = (argv: string[], cwd: string) => {
      const run = (env: Record<string, string>) => spawnSync('python3', argv, { cwd, encoding: 'utf8', env: { ...process.env, ...env } });
      const warm = run(server.env);
      const cold = run({ PATH: `${join(real, '..')}:${process.env.PATH}` });
      assert.deepEqual([warm.status, warm.stdout, warm.stderr], [cold.status, cold.stdout, cold.stderr], `${argv.join(' ')} in ${cwd}`);
      return warm;
    };
    for (const n of [1, 2]) {
      for (const d of dirs) writeFileSync(join(d, 'prog.py'), body(n));
      for (const d of dirs) {
        assert.match(runBoth([join(d, 'prog.py')], scratch).stdout, new RegExp(`^${n} `));
        assert.match(runBoth([join(d, 'prog.py'), 'fail'], d).stderr, new RegExp(`File "${join(d, 'prog.py')}", line 4, in f`));
        assert.match(runBoth([join(d, 'prog.py'), 'fail'], scratch).stderr, new RegExp(`File "${join(d, 'prog.py')}", line 6`));
      }
    }
    // Not Python source: whatever the interpreter says about it.
    writeFileSync(join(dirs[0], 'bad.py'), 'def (:\n');
    assert.notEqual(runBoth([join(dirs[0], 'bad.py')], scratch).status, 0);
  });
});

describe('shared pipeline runs', () => {
  it('answer a run with an earlier one only when every input is byte-identical', async () => {
    const server = await sharedGatePython();
    assert.ok(server.sharedRunsPath, 'the warm server shares runs (bash and cc present)');
    const root = join(scratch, 'shared');
    const app = join(root, 'app');
    mkdirSync(app, { recursive: true });
    // Each real run appends to the marker (outside every tree the key covers): a shared answer does not.
    const marker = join(root, 'ran.log');
    const pipeline = (extra = '') => `#!/bin/bash\necho "$(basename "$1")" >> "$MARKER"\nmkdir -p "$2/sub"\ncat "$1"/*.txt | tr a-z A-Z > "$2/sub/out.txt"\necho "x=$EXTRA" >> "$2/sub/out.txt"\n${extra}`;
    writeFileSync(join(app, 'pipeline.sh'), pipeline());
    let n = 0;
    const input = (files: Record<string, string>) => {
      const dir = join(root, `in-${++n}`);
      mkdirSync(dir);
      for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
      return dir;
    };
    const run = (src: string, options: { env?: Record<string, string>; stdio?: 'ignore' | 'pipe'; dst?: string } = {}) => {
      const dst = options.dst ?? join(root, `out-${++n}`);
      mkdirSync(dst, { recursive: true });
      const r = spawnSync('bash', [join(app, 'pipeline.sh'), src, dst], { cwd: root, encoding: 'utf8', stdio: options.stdio ?? 'ignore', env: { ...process.env, ...server.env, PATH: server.sharedRunsPath!, TBRL_SHARED_RUNS: 'test-a', MARKER: marker, EXTRA: '1', ...options.env } });
      const out = (() => { try { return readFileSync(join(dst, 'sub', 'out.txt'), 'utf8'); } catch { return undefined; } })();
      return { status: r.status, out, stdout: r.stdout, mode: lstatSync(join(dst, 'sub')).mode };
    };
    const runs = () => (readFileSync(marker, 'utf8').match(/\n/g) ?? []).length;

    const first = run(input({ 'a.txt': 'abc\n' }));
    assert.deepEqual([first.status, first.out, runs()], [0, 'ABC\nx=1\n', 1]);
    // Same bytes in another input and output directory: answered with the kept run.
    const again = run(input({ 'a.txt': 'abc\n' }));
    assert.deepEqual([again.status, again.out, again.mode, runs()], [0, 'ABC\nx=1\n', first.mode, 1]);
    // One input byte differs: a real run, its own result.
    assert.deepEqual([run(input({ 'a.txt': 'abd\n' })).out, runs()], ['ABD\nx=1\n', 2]);
    // Another file name, same bytes.
    assert.deepEqual([run(input({ 'b.txt': 'abc\n' })).out, runs()], ['ABC\nx=1\n', 3]);
    // Another variable, another scope.
    assert.deepEqual([run(input({ 'a.txt': 'abc\n' }), { env: { EXTRA: '2' } }).out, runs()], ['ABC\nx=2\n', 4]);
    assert.deepEqual([run(input({ 'a.txt': 'abc\n' }), { env: { TBRL_SHARED_RUNS: 'test-b' } }).out, runs()], ['ABC\nx=1\n', 5]);
    // Without a scope, or with stdout on a pipe: bash runs as it is, output included.
    assert.deepEqual([run(input({ 'a.txt': 'abc\n' }), { env: { TBRL_SHARED_RUNS: '' } }).out, runs()], ['ABC\nx=1\n', 6]);
    writeFileSync(join(app, 'pipeline.sh'), pipeline('echo said\n'));
    const piped = run(input({ 'a.txt': 'abc\n' }), { stdio: 'pipe' });
    assert.deepEqual([piped.stdout, runs()], ['said\n', 7]);
    // A changed pipeline (the entry's tree) is a real run; a file beside it counts too.
    assert.deepEqual([run(input({ 'a.txt': 'abc\n' })).out, runs()], ['ABC\nx=1\n', 8]);
    assert.equal(run(input({ 'a.txt': 'abc\n' })).out, 'ABC\nx=1\n');
    assert.equal(runs(), 8);
    writeFileSync(join(app, 'notes.txt'), 'beside the entry');
    run(input({ 'a.txt': 'abc\n' }));
    assert.equal(runs(), 9);
    // Exit status is kept with the output.
    writeFileSync(join(app, 'pipeline.sh'), pipeline('exit 3\n'));
    assert.deepEqual([run(input({ 'a.txt': 'q\n' })).status, run(input({ 'a.txt': 'q\n' })).status, runs()], [3, 3, 10]);
    // Output naming its own paths, or a run that changes its own tree: never kept.
    writeFileSync(join(app, 'pipeline.sh'), pipeline('echo "$2" > "$2/where"\n'));
    const where = [run(input({ 'a.txt': 'w\n' })), run(input({ 'a.txt': 'w\n' }))];
    assert.equal(runs(), 12);
    assert.equal(where[0].out, 'W\nx=1\n');
    writeFileSync(join(app, 'pipeline.sh'), pipeline('echo more >> "$(dirname "$0")/notes.txt"\n'));
    run(input({ 'a.txt': 'v\n' }));
    run(input({ 'a.txt': 'v\n' }));
    assert.equal(runs(), 14);
    assert.equal(readFileSync(join(app, 'notes.txt'), 'utf8'), 'beside the entrymore\nmore\n');
    // An output directory that is not empty: a real run.
    writeFileSync(join(app, 'pipeline.sh'), pipeline());
    run(input({ 'a.txt': 'u\n' }));
    const filled = join(root, 'filled');
    mkdirSync(filled);
    writeFileSync(join(filled, 'old.txt'), 'old');
    assert.equal(run(input({ 'a.txt': 'u\n' }), { dst: filled }).out, 'U\nx=1\n');
    assert.equal(runs(), 16);
    assert.equal(readFileSync(join(filled, 'old.txt'), 'utf8'), 'old');
  });

  it('give the same runs when the spawner hands the stand-in\'s requests over itself', async () => {
    const server = await sharedGatePython();
    assert.ok(server.sharedRunsPath && server.run && server.handedOver);
    const root = join(scratch, 'shared-spawner');
    const app = join(root, 'app');
    mkdirSync(app, { recursive: true });
    const marker = join(root, 'ran.log');
    writeFileSync(marker, '');
    writeFileSync(join(app, 'pipeline.sh'), '#!/bin/bash\necho ran >> "$MARKER"\ncat "$1"/*.txt | tr a-z A-Z > "$2/out.txt"\n[ "$(cat "$1"/*.txt)" != fail ] || exit 4\n');
    let n = 0;
    const run = async (text: string, direct: boolean) => {
      const src = join(root, `in-${++n}`);
      const dst = join(root, `out-${n}`);
      mkdirSync(src);
      mkdirSync(dst);
      writeFileSync(join(src, 'a.txt'), text);
      const r = await server.run!(['bash', join(app, 'pipeline.sh'), src, dst], { cwd: root, env: { ...server.env, PATH: server.sharedRunsPath!, TBRL_SHARED_RUNS: `spawner-${process.pid}`, MARKER: marker }, discardOutput: true, direct });
      return [r.code, readFileSync(join(dst, 'out.txt'), 'utf8')];
    };
    const runs = () => (readFileSync(marker, 'utf8').match(/\n/g) ?? []).length;
    for (const [text, code] of [['abc\n', 0], ['fail', 4]] as const) {
      const before: { runs: number; handed: number } = { runs: runs(), handed: server.handedOver() };
      // A miss: nothing kept yet, so bash runs (as the stand-in's child); then three answers from the kept run.
      const results = [await run(text, true), await run(text, true), await run(text, false), await run(text, true)];
      assert.deepEqual(results, Array(4).fill([code, text.toUpperCase()]), text);
      assert.equal(runs() - before.runs, 1, 'one real run, the rest answered from it');
      assert.equal(server.handedOver() - before.handed, 2, 'the two direct hits needed no stand-in');
    }
  });
});

describe('reused processes', () => {
  // (A reused process holds its channel to the server above fd 511, close-on-exec.)
  // What a fresh process would show: a module global, threads, a signal handler, the umask, fds, the
  // decimal context, csv's limit, tempfile's directory, an imported module, the environment (the C
  // library's too: what a child process inherits) and cwd.
  const report = [
    'import csv, decimal, json, os, signal, sys, tempfile, threading',
    'print(getattr(json, "planted", None), threading.active_count(), signal.getsignal(signal.SIGUSR1), os.umask(0o022),',
    '      sorted(int(fd) for fd in os.listdir("/proc/self/fd") if int(fd) < 256), decimal.getcontext().prec, csv.field_size_limit(), tempfile.gettempdir(),',
    '      "colorsys" in sys.modules, os.environ.get("PLANTED"), __import__("subprocess").run(["sh", "-c", "echo $PLANTED_C"], capture_output=True, text=True).stdout.strip(), os.getcwd(), sys.argv[1:], sys.dont_write_bytecode)',
  ].join('\n');
  const misbehaviours: Record<string, string> = {
    global: 'json.planted = 1',
    thread: 'threading.Thread(target=__import__("time").sleep, args=(0.3,), daemon=True).start()',
    signal: 'signal.signal(signal.SIGUSR1, signal.SIG_IGN)',
    umask: 'os.umask(0o077)',
    fd: 'os.open("/dev/null", os.O_RDONLY)',
    decimal: 'decimal.getcontext().prec = 5',
    csv: 'csv.field_size_limit(7)',
    tempdir: 'tempfile.tempdir = "/nowhere"',
    module: 'import colorsys',
    environ: 'os.environ["PLANTED"] = "1"',
    // Only the C library's environment: the next run's is set by its differences from os.environ.
    'c-environ': 'os.putenv("PLANTED_C", "1")',
    bytecode: 'sys.dont_write_bytecode = True',
    exit: 'os._exit(5)',
  };
  it('give every run what a fresh process gives it, whatever the run before left behind', async () => {
    const server = await sharedGatePython();
    assert.ok(server.run, 'the spawner is up');
    const dir = join(scratch, 'reuse');
    mkdirSync(dir, { recursive: true });
    const script = join(dir, 'prog.py');
    const source = `${report.replace('print(', 'if sys.argv[1] != "report":\n    exec(open(sys.argv[2]).read())\nprint(os.getpid(), ')}\n`;
    writeFileSync(script, source);
    const marker = { TBRL_GATE_REUSE: createHash('sha256').update(source).digest('hex') };
    // A fresh process forked from the server (no reuse without the variable).
    const fresh = await server.run(['python3', script, 'report'], { cwd: dir, env: { ...server.env, TMPDIR: dir } });
    const withoutPid = (out: string) => out.replace(/^\d+ /, '');
    const run = (args: string[], env: Record<string, string> = {}) => server.run!(['python3', script, ...args], { cwd: dir, env: { ...server.env, TMPDIR: dir, ...marker, ...env } });
    const first = await run(['report']);
    const second = await run(['report']);
    assert.equal(first.code, 0, first.stderr);
    assert.equal(withoutPid(first.stdout), withoutPid(fresh.stdout));
    assert.equal(second.stdout, first.stdout, 'a clean run leaves its process to the next run of the same script');
    for (const [name, code] of Object.entries(misbehaviours)) {
      writeFileSync(join(dir, 'bad.py'), code);
      const bad = await run(['bad', join(dir, 'bad.py')]);
      assert.equal(bad.code, name === 'exit' ? 5 : 0, `${name}: ${bad.stderr}`);
      const after = await run(['report']);
      assert.equal(withoutPid(after.stdout), withoutPid(fresh.stdout), `after a run that changed ${name}`);
    }
    // The variable never reaches the program, and a script whose bytes are not the declared ones is run fresh.
    const seen = await server.run!(['python3', '-c', 'import os; print(os.environ.get("TBRL_GATE_REUSE"))'], { env: { ...server.env, ...marker } });
    assert.equal(seen.stdout, 'None\n');
    const pids = new Set<string>();
    for (let i = 0; i < 3; i++) pids.add((await run(['report'], { TBRL_GATE_REUSE: '0'.repeat(64) })).stdout.split(' ')[0]);
    assert.equal(pids.size, 3);
  });

  it('reuse a process for a script the gates declared, run through a bash entry point, and for no other', async () => {
    const server = await sharedGatePython();
    assert.ok(server.allowReuse, 'the server reuses processes');
    const dir = join(scratch, 'declared');
    mkdirSync(dir, { recursive: true });
    // As pipeline.sh runs ref_pipeline.py: no variable can mark the request, only the script's bytes.
    writeFileSync(join(dir, 'entry.sh'), '#!/bin/bash\nexec python3 "${0%/*}/prog.py" "$@"\n');
    const source = `${report.replace('print(', 'if sys.argv[1] != "report":\n    exec(open(sys.argv[2]).read())\nprint(os.getpid(), ')}\n`;
    const run = (args: string[]) => server.run!(['bash', join(dir, 'entry.sh'), ...args], { cwd: dir, env: { ...server.env, TMPDIR: dir } });
    const pidsOf = async (n: number) => {
      const pids = new Set<string>();
      for (let i = 0; i < n; i++) pids.add((await run(['report'])).stdout.split(' ')[0]);
      return pids;
    };
    writeFileSync(join(dir, 'prog.py'), source);
    const fresh = await run(['report']);
    assert.equal(fresh.code, 0, fresh.stderr);
    assert.equal((await pidsOf(3)).size, 3, 'undeclared: a fresh process every run');
    assert.equal(await server.allowReuse([source]), true);
    assert.equal((await pidsOf(3)).size, 1, 'declared: one process for the runs of the same bytes');
    const withoutPid = (out: string) => out.replace(/^\d+ /, '');
    for (const [name, code] of Object.entries(misbehaviours)) {
      writeFileSync(join(dir, 'bad.py'), code);
      const bad = await run(['bad', join(dir, 'bad.py')]);
      assert.equal(bad.code, name === 'exit' ? 5 : 0, `${name}: ${bad.stderr}`);
      assert.equal(withoutPid((await run(['report'])).stdout), withoutPid(fresh.stdout), `after a run that changed ${name}`);
    }
    // Other bytes at the same path: not declared, a fresh process every run.
    writeFileSync(join(dir, 'prog.py'), `${source}# changed\n`);
    assert.equal((await pidsOf(3)).size, 3, 'changed bytes are not the declared script');
  });
});
