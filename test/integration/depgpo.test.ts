/**
 * DepGPO on a real traced run: the example task in a real container, a scripted agent whose steps
 * exercise indirect credit (a script file credited through the command that runs it), a junk write,
 * a todo-only step and an overwrite, then `tbrl graph` and `tbrl credit` on the trajectory it wrote.
 */
import { runTaskOk } from '../helpers/run';
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { tmpdir } from 'node:os';
import { ScriptedPolicy } from '../../src/core/agent/scripted';
import { readTrajectory } from '../../src/core/trajectory/reader';
import { depgpoOfTrajectory } from '../../src/core/depgpo/trajectory';
import { buildGraphView } from '../../src/core/depgpo/view';
import { main } from '../../src/cli/main';
import type { GraphView } from '../../src/core/depgpo/view';

const EXAMPLE = resolve('examples/hello-world');
const scratch = mkdtempSync(join(tmpdir(), 'tbrl-depgpo-it-'));
after(() => rmSync(scratch, { recursive: true, force: true }));
const env = { PATH: process.env.PATH, HOME: process.env.HOME, DOCKER_HOST: process.env.DOCKER_HOST } as NodeJS.ProcessEnv;

const SCRIPT = [
  'import json, re',
  'from collections import Counter',
  'words = [w.lower() for w in re.findall(r"[A-Za-z]+", open("/app/data/input.txt").read())]',
  'counts = sorted(Counter(words).items(), key=lambda kv: (-kv[1], kv[0]))',
  'json.dump([[w, c] for w, c in counts], open("/app/out/counts.json", "w"))',
  'open("/app/out/summary.txt", "w").write(f"{len(counts)} distinct words, {len(words)} total, top: {counts[0][0]}\\n")',
];
const turns = [
  // step 0: a first draft of the output that the script will overwrite without reading: no credit.
  '<bash>\ncmd: mkdir -p /app/out && echo draft > /app/out/summary.txt\n</bash>',
  // step 1: the script, credited indirectly through step 2 which reads it and writes E's files.
  `<file>\naction: write\nfile_path: "/app/wordfreq.py"\ncontent: |\n${SCRIPT.map((l) => `  ${l}`).join('\n')}\n</file>`,
  '<bash>\ncmd: python3 /app/wordfreq.py\n</bash>',
  // step 3: a junk file nobody reads.
  '<bash>\ncmd: echo scratch > /tmp/notes.txt\n</bash>',
  // step 4: only a todo: no command, score 0.
  '<todo>\noperations:\n  - action: add\n    content: "check outputs"\n</todo>',
  '<finish>\nmessage: done\n</finish>',
];

test('a traced run gives the dependency graph, E, scores and factors the rules predict', async () => {
  const r = await runTaskOk({ taskDir: EXAMPLE, outDir: join(scratch, 'run'), env, cwd: scratch, policyOverride: new ScriptedPolicy(turns) });
  assert.equal(r.footer.reward?.total, 1, JSON.stringify(r.footer.reward));
  assert.equal(r.header.sandbox?.tracing.available, true, JSON.stringify(r.header.sandbox?.tracing));
  const t = await readTrajectory(r.trajectoryPath);
  const { input, result } = depgpoOfTrajectory(t);
  const view = buildGraphView(input, result);
  const byStep = (step: number) => view.nodes.filter((n) => n.step === step);
  const [draft] = byStep(0);
  const [write] = byStep(1);
  const [run] = byStep(2);
  const [junk] = byStep(3);
  assert.equal(byStep(4).length, 0, 'the todo step has no command');

  // E holds both outputs the tests read; the script's writes survive in them.
  assert.ok(result.resources.files.includes('/app/out/counts.json') && result.resources.files.includes('/app/out/summary.txt'), JSON.stringify(result.resources));
  assert.ok(view.edges.some((e) => e.source === write.id && e.target === run.id && e.kind === 'file' && e.labels.includes('/app/wordfreq.py')), JSON.stringify(view.edges));
  // The draft was overwritten without being read: no edge from it, and none of its lines survive.
  assert.ok(!view.edges.some((e) => e.source === draft.id && e.target === run.id), JSON.stringify(view.edges));
  assert.equal(draft.score, 0);
  assert.equal(write.write, 1, 'every line of the script reaches E through the command that runs it');
  assert.equal(run.write, 1);
  assert.equal(junk.score, 0);
  // s = [0 1 1 0 0 0]: f = [0 3 3 0 0 0] (finish is a step without a command too).
  assert.deepEqual(result.stepScores, [0, 1, 1, 0, 0, 0]);
  assert.deepEqual(result.factors, [0, 3, 3, 0, 0, 0]);
  assert.equal(r.footer.depgpo?.factors.join(' '), '0 3 3 0 0 0', 'the footer has the same factors');
  assert.deepEqual(view.paths.find((p) => p.from === write.id)?.path.slice(0, 2), [write.id, run.id]);

  const json = join(scratch, 'graph.json');
  const adv = join(scratch, 'adv.json');
  assert.equal(await main(['graph', r.trajectoryPath, '--json', json, '--dot', join(scratch, 'graph.dot')]), 0);
  assert.equal((JSON.parse(readFileSync(json, 'utf8')) as GraphView).nodes.length, view.nodes.length);
  assert.equal(await main(['credit', r.trajectoryPath, '-o', adv]), 0);
});
