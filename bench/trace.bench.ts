// Tracing overhead: the same 50-command trajectory (write a small Python project, build it with
// compileall and zipapp, grep/find/wc around it, edit it with sed, run its tests with pytest, start
// and query a local server) in tbrl-standin/python:3, untraced and traced, in the same run: two
// sandboxes side by side run each command back to back, so drift on the shared machine hits both.
// Run: node --import tsx bench/trace.bench.ts [--rounds N] [--mode shell|attach] [--check]   (--check: exit 1 if ratio > 1.5)
import { performance } from 'node:perf_hooks';
import { createDockerProvider, type Sandbox } from '../src/core/sandbox/index';
import { createTracedSandbox } from '../src/core/trace/index';

const MODULES = ['parser', 'stats', 'report', 'cli', 'store'];

function moduleSource(name: string): string {
  const body = Array.from({ length: 40 }, (_, i) => `def ${name}_f${i}(x):\n    return x * ${i + 1} + len(${JSON.stringify(name)})\n`).join('\n');
  return `"""${name} module"""\nimport json, os, re\n\n${body}\n`;
}

function testSource(name: string): string {
  const tests = Array.from({ length: 8 }, (_, i) => `def test_${name}_${i}():\n    assert ${name}.${name}_f${i}(2) == 2 * ${i + 1} + ${name.length}\n`).join('\n');
  return `from proj import ${name}\n\n${tests}\n`;
}

function heredoc(path: string, content: string): string {
  return `mkdir -p "$(dirname ${path})" && cat > ${path} <<'TBRL_EOF'\n${content}TBRL_EOF`;
}

/** 50 commands, as an agent solving a small build-and-test task would issue them. */
export function trajectory(): string[] {
  const cmds: string[] = [
    'mkdir -p /work/proj/proj /work/proj/tests && cd /work/proj && ls -la',
    'python3 --version && pip --version | head -1',
    heredoc('/work/proj/proj/__init__.py', '__version__ = "0.1.0"\n'),
  ];
  for (const m of MODULES) cmds.push(heredoc(`/work/proj/proj/${m}.py`, moduleSource(m)));
  for (const m of MODULES) cmds.push(heredoc(`/work/proj/tests/test_${m}.py`, testSource(m)));
  cmds.push(
    heredoc('/work/proj/proj/__main__.py', 'import sys\nfrom proj import stats\nprint("result", stats.stats_f3(int(sys.argv[1]) if len(sys.argv) > 1 else 1))\n'),
    'find . -name "*.py" | sort',
    'grep -rn "def stats_f1" proj/',
    'wc -l proj/*.py tests/*.py | tail -1',
    'python3 -m compileall -q proj && find . -name "*.pyc" | wc -l',
    'python3 -m pytest -q tests 2>&1 | tail -3',
    'sed -i "s/return x \\* 4 + len/return x * 4 + 1 + len/" proj/parser.py',
    'grep -n "x \\* 4" proj/parser.py',
    'python3 -m pytest -q tests/test_parser.py 2>&1 | tail -3',
    'sed -i "s/return x \\* 4 + 1 + len/return x * 4 + len/" proj/parser.py',
    'python3 -m pytest -q -x tests 2>&1 | tail -2',
    'python3 -m proj 7',
    'mkdir -p build && python3 -m zipapp proj -o build/proj.pyz && ls -la build',
    'python3 -c "import zipfile; print(len(zipfile.ZipFile(\'build/proj.pyz\').namelist()))"',
    'tar czf build/src.tgz proj tests && tar tzf build/src.tgz | wc -l',
    'cat proj/__init__.py',
    'head -5 proj/stats.py',
    heredoc('/work/proj/config.json', JSON.stringify({ name: 'proj', port: 8099, workers: 2 }, null, 2) + '\n'),
    'python3 -c "import json; c = json.load(open(\'config.json\')); print(c[\'port\'])"',
    'mkdir -p data && for i in $(seq 1 200); do echo "$i,$((i * 7 % 13)),item$i" ; done > data/input.csv && wc -l data/input.csv',
    'sort -t, -k2 -n data/input.csv | head -3',
    'awk -F, \'{ s += $2 } END { print s }\' data/input.csv',
    'python3 -c "import csv; rows = list(csv.reader(open(\'data/input.csv\'))); print(sum(int(r[1]) for r in rows))"',
    'grep -c item1 data/input.csv',
    'python3 -m http.server 8099 --bind 127.0.0.1 >/tmp/server.log 2>&1 & sleep 0.5; echo "server on port 8099"',
    'python3 -c "import urllib.request; print(urllib.request.urlopen(\'http://127.0.0.1:8099/config.json\').status)"',
    'python3 -c "import urllib.request; print(len(urllib.request.urlopen(\'http://127.0.0.1:8099/data/input.csv\').read()))"',
    'kill %1; wait 2>/dev/null; echo stopped',
    'sed -i "s/\\"workers\\": 2/\\"workers\\": 4/" config.json && grep workers config.json',
    'python3 -m pytest -q tests 2>&1 | tail -2',
    'rm -rf build && mkdir build && cp -r proj build/ && ls build/proj | wc -l',
    'find . -name __pycache__ -prune -exec rm -rf {} + ; find . -name "*.pyc" | wc -l',
    'python3 -m compileall -q . && echo built',
    'du -sh . | cut -f1',
    'ps aux | wc -l',
    'env | grep -c PATH',
    'python3 -m pytest -q tests 2>&1 | tail -1',
  );
  if (cmds.length !== 50) throw new Error(`trajectory has ${cmds.length} commands, expected 50`);
  return cmds;
}

interface Side {
  sandbox: Sandbox;
  ms: number;
  perCommand: number[];
  failures: number;
  writes: number;
  reads: number;
}

/**
 * Both sandboxes live at once and run command i back to back (order alternating per command), so
 * load from the rest of the machine hits both sides alike; the trajectory's sum is compared.
 */
async function lockstep(round: number, mode: 'shell' | 'attach'): Promise<{ u: Side; t: Side; setupU: number; setupT: number }> {
  const provider = createDockerProvider();
  let t0 = performance.now();
  const plain = await provider.create({ image: { kind: 'image', image: 'tbrl-standin/python:3' }, runId: `bench-trace-u-${process.pid}-${round}` });
  const setupU = performance.now() - t0;
  t0 = performance.now();
  const innerT = await provider.create({ image: { kind: 'image', image: 'tbrl-standin/python:3' }, runId: `bench-trace-t-${process.pid}-${round}` });
  const traced = await createTracedSandbox(innerT, { mode });
  const setupT = performance.now() - t0;
  const u: Side = { sandbox: plain, ms: 0, perCommand: [], failures: 0, writes: 0, reads: 0 };
  const t: Side = { sandbox: traced, ms: 0, perCommand: [], failures: 0, writes: 0, reads: 0 };
  try {
    if (!traced.info.tracing.available) throw new Error(`tracing unavailable: ${traced.info.tracing.reason}`);
    for (const [i, cmd] of trajectory().entries()) {
      const sides = (i + round) % 2 === 0 ? [u, t] : [t, u];
      for (const side of sides) {
        const start = performance.now();
        const r = await side.sandbox.exec(cmd, { trace: side === t, timeoutMs: 120_000 });
        const ms = performance.now() - start;
        side.ms += ms;
        side.perCommand.push(ms);
        if (r.exitCode !== 0) side.failures++;
        side.writes += r.trace?.writes.length ?? 0;
        side.reads += r.trace?.reads.length ?? 0;
      }
    }
    return { u, t, setupU, setupT };
  } finally {
    await plain.close();
    await traced.close();
  }
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const rounds = Number(args[args.indexOf('--rounds') + 1]) || 2;
  const mode = args.includes('--mode') && args[args.indexOf('--mode') + 1] === 'attach' ? 'attach' : 'shell';
  let untracedMs = 0;
  let tracedMs = 0;
  let setupU = 0;
  let setupT = 0;
  const cmds = trajectory();
  const worst: { i: number; ratio: number; u: number; t: number }[] = [];
  for (let round = 0; round < rounds; round++) {
    const r = await lockstep(round, mode);
    console.log(`round ${round}: untraced ${r.u.ms.toFixed(0)} ms, traced ${r.t.ms.toFixed(0)} ms for 50 commands (${r.u.failures}/${r.t.failures} non-zero exits; traced ${r.t.writes} file writes, ${r.t.reads} reads)`);
    untracedMs += r.u.ms;
    tracedMs += r.t.ms;
    setupU += r.setupU;
    setupT += r.setupT;
    r.u.perCommand.forEach((uMs, i) => worst.push({ i, ratio: r.t.perCommand[i] / uMs, u: uMs, t: r.t.perCommand[i] }));
  }
  const ratio = tracedMs / untracedMs;
  worst.sort((a, b) => b.t - b.u - (a.t - a.u));
  console.log('largest absolute overheads:');
  for (const w of worst.slice(0, 5)) console.log(`  +${(w.t - w.u).toFixed(0)} ms (${w.u.toFixed(0)} -> ${w.t.toFixed(0)} ms) ${cmds[w.i].split('\n')[0].slice(0, 70)}`);
  console.log(`| trajectory (50 commands, mean of ${rounds}, ${mode} mode) | untraced ${(untracedMs / rounds).toFixed(0)} ms | traced ${(tracedMs / rounds).toFixed(0)} ms | ratio ${ratio.toFixed(2)} |`);
  console.log(`| sandbox setup | untraced ${(setupU / rounds).toFixed(0)} ms | traced ${(setupT / rounds).toFixed(0)} ms (incl. helper container + strace attach) |`);
  if (args.includes('--check') && ratio > 1.5) {
    console.error(`tracing overhead ratio ${ratio.toFixed(2)} exceeds 1.5`);
    process.exit(1);
  }
}

if (require.main === module) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
