// Tracing overhead: the same 50-command trajectory (write a small Python project, build it with
// compileall and zipapp, grep/find/wc around it, edit it with sed, run its tests with pytest, start
// and query a local server) in tbrl-standin/python:3, untraced and traced, in the same run. Rounds
// alternate U,T,T,U… so drift on the shared machine hits both sides alike.
// Run: node --import tsx bench/trace.bench.ts [--rounds N] [--check]   (--check: exit 1 if ratio > 1.5)
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

async function runOnce(traced: boolean, runId: string): Promise<{ ms: number; setupMs: number; failures: number; traced: boolean; writes: number; reads: number; reason?: string }> {
  const provider = createDockerProvider();
  const t0 = performance.now();
  const inner = await provider.create({ image: { kind: 'image', image: 'tbrl-standin/python:3' }, runId });
  let sb: Sandbox = inner;
  let reason: string | undefined;
  if (traced) {
    const t = await createTracedSandbox(inner);
    reason = t.info.tracing.reason;
    sb = t;
  }
  const setupMs = performance.now() - t0;
  let failures = 0;
  let writes = 0;
  let reads = 0;
  const start = performance.now();
  try {
    for (const cmd of trajectory()) {
      const r = await sb.exec(cmd, { trace: traced, timeoutMs: 120_000 });
      if (r.exitCode !== 0) failures++;
      writes += r.trace?.writes.length ?? 0;
      reads += r.trace?.reads.length ?? 0;
    }
    return { ms: performance.now() - start, setupMs, failures, traced: traced && !reason, writes, reads, reason };
  } finally {
    await sb.close();
  }
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const rounds = Number(args[args.indexOf('--rounds') + 1]) || 2;
  const order: boolean[] = [];
  for (let i = 0; i < rounds; i++) order.push(...(i % 2 === 0 ? [false, true] : [true, false]));
  let untracedMs = 0;
  let tracedMs = 0;
  let setupU = 0;
  let setupT = 0;
  for (const [i, traced] of order.entries()) {
    const r = await runOnce(traced, `bench-trace-${process.pid}-${i}`);
    if (traced && !r.traced) throw new Error(`tracing unavailable: ${r.reason}`);
    console.log(`${traced ? 'traced  ' : 'untraced'} run ${i}: ${r.ms.toFixed(0)} ms for 50 commands (setup ${r.setupMs.toFixed(0)} ms, ${r.failures} non-zero exits${traced ? `, ${r.writes} file writes, ${r.reads} reads traced` : ''})`);
    if (traced) {
      tracedMs += r.ms;
      setupT += r.setupMs;
    } else {
      untracedMs += r.ms;
      setupU += r.setupMs;
    }
  }
  const ratio = tracedMs / untracedMs;
  console.log(`| trajectory (50 commands) | untraced ${(untracedMs / rounds).toFixed(0)} ms | traced ${(tracedMs / rounds).toFixed(0)} ms | ratio ${ratio.toFixed(2)} |`);
  console.log(`| sandbox setup | untraced ${(setupU / rounds).toFixed(0)} ms | traced ${(setupT / rounds).toFixed(0)} ms (helper container + strace attach) |`);
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
