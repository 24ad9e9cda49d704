import { test } from 'node:test';
import assert from 'node:assert/strict';
import { computeDepgpo } from '../../src/core/depgpo/compute';
import { SubstringMatcher } from '../../src/core/depgpo/matcher';
import { groupAdvantages, stepAdvantages, stepFactors } from '../../src/core/depgpo/factors';
import type { DepgpoCommand, DepgpoInput } from '../../src/core/depgpo/types';
import type { CommandTrace, FileWrite, Hunk } from '../../src/core/trace/types';

// Hand-worked cases, one per rule of DESIGN.md's DepGPO paragraph. Each comment shows the arithmetic.

const h = (oldStart: number, oldLines: number, newStart: number, newLines: number): Hunk => ({ oldStart, oldLines, newStart, newLines });
const create = (path: string, lines: number): FileWrite => ({ path, hunks: [h(0, 0, 1, lines)], created: true, linesAfter: lines });
const edit = (path: string, hunks: Hunk[], linesAfter: number): FileWrite => ({ path, hunks, linesAfter });
const trace = (t: Partial<CommandTrace>): CommandTrace => ({ reads: [], writes: [], stdoutValues: [], ports: [], processes: [], ...t });
const cmd = (step: number, text: string, t: Partial<CommandTrace>): DepgpoCommand => ({ step, text, trace: trace(t) });
const input = (commands: DepgpoCommand[], files: string[], more: Partial<DepgpoInput> = {}): DepgpoInput => ({
  commands,
  instruction: 'Make the tests pass.',
  verifier: { reads: files, writes: [], ports: [], processes: [] },
  stepTokens: commands.map(() => 10),
  ...more,
});
const edgeList = (r: ReturnType<typeof computeDepgpo>) => r.edges.map((e) => `${e.from}->${e.to}:${e.kind}:${e.labels.join(',')}`);
const close = (actual: number[], expected: number[]) => {
  assert.equal(actual.length, expected.length, `length ${actual.length} vs ${expected.length}`);
  actual.forEach((a, i) => assert.ok(Math.abs(a - expected[i]) < 1e-12, `[${i}] ${a} != ${expected[i]}`));
};

test('an overwrite alone makes no edge and takes the credit from the overwritten writer', () => {
  // c0 writes 3 lines; c1 replaces all 3 without reading the file. Verifier reads the file.
  // No edge; q(c0) = 0/3, q(c1) = 3/3. s = [0, 1], m = 0, mean excess 0.5, f = [0, 2], Z = (10·0 + 10·2)/20 = 1.
  const r = computeDepgpo(input([cmd(0, 'echo a > /app/a', { writes: [create('/app/a', 3)] }), cmd(1, 'printf x > /app/a', { writes: [edit('/app/a', [h(1, 3, 1, 3)], 3)] })], ['/app/a']));
  assert.deepEqual(r.edges, []);
  close(r.stepScores, [0, 1]);
  close(r.factors, [0, 2]);
  assert.equal(r.z, 1);
  // The same overwrite after reading the file does depend on c0: one file edge.
  const read = computeDepgpo(input([cmd(0, 'echo a > /app/a', { writes: [create('/app/a', 3)] }), cmd(1, 'sed -i s/a/b/ /app/a', { reads: ['/app/a'], writes: [edit('/app/a', [h(1, 3, 1, 3)], 3)] })], ['/app/a']));
  assert.deepEqual(edgeList(read), ['0->1:file:/app/a']);
  close(read.stepScores, [0, 1]);
});

test('line provenance follows lines through an insertion above them, a replacement and a deletion', () => {
  // c0 creates f = [A B]. c1 inserts 3 lines at the top: [X X X A B]. c2 replaces line 4 (= A, moved down
  // by the insertion): [X X X C B]. c3 reads f: owners c0 (B), c1 (X X X), c2 (C) -> 3 edges.
  // c4 deletes line 5 (B, the last line of c0). c5 reads f: only c1 and c2 remain -> no edge from c0.
  // Verification: f = [X X X C] ∈ E: q(c0) = 0/2, q(c1) = 3/3, q(c2) = 1/1, q(c4) has no lines -> 0.
  const f = '/app/f.py';
  const r = computeDepgpo(input([
    cmd(0, 'write f', { writes: [create(f, 2)] }),
    cmd(1, 'insert header', { writes: [edit(f, [h(0, 0, 1, 3)], 5)] }),
    cmd(2, 'edit line 4', { writes: [edit(f, [h(4, 1, 4, 1)], 5)] }),
    cmd(3, 'cat f', { reads: [f] }),
    cmd(4, 'delete last line', { writes: [edit(f, [h(5, 1, 4, 0)], 4)] }),
    cmd(5, 'cat f', { reads: [f] }),
  ], [f]));
  assert.deepEqual(edgeList(r), ['0->3:file:/app/f.py', '1->3:file:/app/f.py', '2->3:file:/app/f.py', '1->5:file:/app/f.py', '2->5:file:/app/f.py']);
  close(r.commandScores.map((c) => c.write ?? -1), [0, 1, 1, -1, -1, -1]);
  // s = [0 1 1 0 0 0]: m = 0, mean = 2/6, f = [0 3 3 0 0 0], Z = 60/60 = 1.
  close(r.factors, [0, 3, 3, 0, 0, 0]);
});

test('indirect credit: a consumer that turns the input into another file E reads passes credit on', () => {
  // c0 writes config (4 lines); c1 reads config and writes out.txt (2 lines). E = {out.txt}.
  // q(c1) = 2/2 (direct); q(c0) = 4/4 through c1 (c1 writes a different file, leaves config alone).
  const r = computeDepgpo(input([
    cmd(0, 'write config', { writes: [create('/app/config.json', 4)] }),
    cmd(1, 'python build.py', { reads: ['/app/config.json'], writes: [create('/app/out.txt', 2)] }),
  ], ['/app/out.txt']));
  assert.deepEqual(edgeList(r), ['0->1:file:/app/config.json']);
  close(r.commandScores.map((c) => c.score), [1, 1]);
  assert.equal(r.fallback, 'all step scores are equal (1): no step is singled out');
});

test('indirect credit is refused when the consumer only writes back into its input file', () => {
  // F = [a a] by c0. c1 reads F and appends one line to F (writes its own input). c2 rewrites lines 1-2
  // of F without reading (c0's lines gone). c3 reads F (= [b b c1]) and writes out.txt ∈ E.
  // c1's line survives to c3, c3 passes credit: q(c1) = 1/1. c2's lines: 2/2 through c3.
  // c0's lines were gone before c3; c1 read them but its reaching lines are in F itself: q(c0) = 0.
  const F = '/app/data.txt';
  const r = computeDepgpo(input([
    cmd(0, 'seed', { writes: [create(F, 2)] }),
    cmd(1, 'append', { reads: [F], writes: [edit(F, [h(2, 0, 3, 1)], 3)] }),
    cmd(2, 'rewrite', { writes: [edit(F, [h(1, 2, 1, 2)], 3)] }),
    cmd(3, 'summarize', { reads: [F], writes: [create('/app/out.txt', 1)] }),
  ], ['/app/out.txt']));
  close(r.commandScores.map((c) => c.score), [0, 1, 1, 1]);
  // s = [0 1 1 1]: m = 0, mean 0.75, f = [0 4/3 4/3 4/3], Z = 1.
  close(r.factors, [0, 4 / 3, 4 / 3, 4 / 3]);
});

test('indirect credit is refused for input lines the consumer overwrites', () => {
  // c0 writes in.txt (4 lines). c1 reads in.txt, writes out.txt (2 lines, ∈ E) and replaces lines 1-2 of in.txt.
  // c0: lines 1-2 overwritten by the consumer -> not counted; lines 3-4 survive c1 -> counted: q(c0) = 2/4.
  // c1: W = 2 (out.txt, direct) + 2 (in.txt, no consumer, not in E): q(c1) = 2/4.
  const r = computeDepgpo(input([
    cmd(0, 'write input', { writes: [create('/app/in.txt', 4)] }),
    cmd(1, 'transform', { reads: ['/app/in.txt'], writes: [create('/app/out.txt', 2), edit('/app/in.txt', [h(1, 2, 1, 2)], 4)] }),
  ], ['/app/out.txt']));
  close(r.commandScores.map((c) => c.write ?? -1), [0.5, 0.5]);
  assert.equal(r.commandScores[0].linesReachingE, 2);
  assert.equal(r.commandScores[1].linesWritten, 4);
});

test('a printed value that the instruction already names makes no stdout edge', () => {
  // c0 prints /app/data.csv and /tmp/build-7f3a; c1 uses both and writes model.txt ∈ E (q = 1).
  // Instruction names /app/data.csv: the edge carries only /tmp/build-7f3a; q(c0) = β·1 = 0.5.
  const commands = [
    cmd(0, 'ls /app; mktemp -d', { stdoutValues: ['/app/data.csv', '/tmp/build-7f3a'] }),
    cmd(1, 'python train.py /app/data.csv --out /tmp/build-7f3a/model.txt', { reads: ['/app/data.csv'], writes: [create('/tmp/build-7f3a/model.txt', 10)] }),
  ];
  const r = computeDepgpo(input(commands, ['/tmp/build-7f3a/model.txt'], { instruction: 'Train on /app/data.csv.' }));
  assert.deepEqual(edgeList(r), ['0->1:stdout:/tmp/build-7f3a']);
  close(r.commandScores.map((c) => c.score), [0.5, 1]);
  // Both values in the instruction: no edge at all, c0 gets nothing.
  const none = computeDepgpo(input(commands, ['/tmp/build-7f3a/model.txt'], { instruction: 'Train on /app/data.csv into /tmp/build-7f3a.' }));
  assert.deepEqual(none.edges, []);
  close(none.commandScores.map((c) => c.score), [0, 1]);
});

test('read score decays by β per stdout hop and counts each writer once at its shortest distance', () => {
  // Stdout edges: c0->c1 (v1), c0->c2 (v1), c1->c2 (v2), c1->c3 (v2). Write scores: q(c1) = 2/4 (E has /out/a
  // only of its two files), q(c2) = 4/8, q(c3) = 1.
  // q_read(c0) = β·q(c1) + β·q(c2) [d=1, not again at d=2 via c1] + β²·q(c3) = 0.25 + 0.25 + 0.25 = 0.75.
  const r = computeDepgpo(input([
    cmd(0, 'mktemp -d', { stdoutValues: ['/work/v1'] }),
    cmd(1, 'build /work/v1', { stdoutValues: ['/work/v2'], writes: [create('/out/a', 2), create('/out/junk', 2)] }),
    cmd(2, 'link /work/v1 /work/v2', { writes: [create('/out/b', 4), create('/out/junk2', 4)] }),
    cmd(3, 'pack /work/v2', { writes: [create('/out/c', 1)] }),
  ], ['/out/a', '/out/b', '/out/c']));
  assert.deepEqual(edgeList(r), ['0->1:stdout:/work/v1', '0->2:stdout:/work/v1', '1->2:stdout:/work/v2', '1->3:stdout:/work/v2']);
  assert.equal(r.commandScores[0].read, 0.75);
  // c1: write 0.5, read β·0.5 + β·1 = 0.75 -> score max = 0.75.
  assert.equal(r.commandScores[1].read, 0.75);
  close(r.commandScores.map((c) => c.score), [0.75, 0.75, 0.5, 1]);
});

test('ports and processes score 1 when the verifier checked them, else 0', () => {
  // c0 serves on 8080 (checked) -> 1; c1 probes 9090 (not checked) -> 0; c2 starts redis-server, the verifier
  // looked for it by name -> 1; c3 left pid 500 "worker" but the verifier inspected pid 501 -> 0.
  const r = computeDepgpo({
    commands: [
      cmd(0, 'python -m http.server 8080 &', { ports: [8080], processes: ['311:python3'] }),
      cmd(1, 'nc -z localhost 9090', { ports: [9090] }),
      cmd(2, 'redis-server --daemonize yes', { processes: ['412:redis-server'] }),
      cmd(3, 'worker &', { processes: ['500:worker'] }),
    ],
    instruction: 'Serve the site on port 8080.',
    verifier: { reads: [], writes: [], ports: [8080], processes: ['redis-server', '501:worker'] },
    stepTokens: [10, 10, 10, 10],
  });
  close(r.commandScores.map((c) => c.portProcess ?? -1), [1, 0, 1, 0]);
  assert.deepEqual(r.resources, { files: [], ports: [8080], processes: ['redis-server', '501:worker'] });
  // s = [1 0 1 0]: f = [2 0 2 0], Z = 1.
  close(r.factors, [2, 0, 2, 0]);
});

test('E is the verifier reads minus the files it wrote', () => {
  const r = computeDepgpo({
    commands: [cmd(0, 'write', { writes: [create('/app/report.xml', 3)] }), cmd(1, 'write', { writes: [create('/app/x', 1)] })],
    instruction: '',
    verifier: { reads: ['/app/report.xml', '/app/x', '/tests/test_x.py'], writes: ['/app/report.xml'], ports: [], processes: [] },
    stepTokens: [1, 1],
  });
  assert.deepEqual(r.resources.files, ['/app/x', '/tests/test_x.py']);
  close(r.stepScores, [0, 1]);
});

test('steps: score is the max over the step commands, steps without commands score 0', () => {
  // Step 0 has two commands (q 0 and q 1) -> 1; step 1 has none (a todo) -> 0; step 2 writes junk -> 0.
  const r = computeDepgpo(input([
    cmd(0, 'a', { writes: [create('/junk', 1)] }),
    cmd(0, 'b', { writes: [create('/app/a', 1)] }),
    cmd(2, 'c', { writes: [create('/junk2', 1)] }),
  ], ['/app/a'], { stepTokens: [30, 10, 20] }));
  close(r.stepScores, [1, 0, 0]);
  // f = [3 0 0], Z = 30·3/60 = 1.5, f/Z = [2 0 0].
  close(r.factors, [3, 0, 0]);
  assert.equal(r.z, 1.5);
});

test('fallback: tracing unavailable, no verifier trace, untraced commands, all scores equal -> every f_t = 1', () => {
  const cmds = [cmd(0, 'a', { writes: [create('/app/a', 1)] }), cmd(1, 'b', {})];
  const off = computeDepgpo(input(cmds, ['/app/a'], { tracing: { available: false, reason: 'no strace in the image' } }));
  assert.deepEqual(off.factors, [1, 1]);
  assert.equal(off.z, 1);
  assert.equal(off.fallback, 'tracing unavailable: no strace in the image');
  const noVerifier = computeDepgpo({ ...input(cmds, []), verifier: undefined });
  assert.deepEqual(noVerifier.factors, [1, 1]);
  assert.match(noVerifier.fallback ?? '', /no verifier trace/);
  const untraced = computeDepgpo(input([{ step: 0, text: 'a' }, { step: 1, text: 'b' }], ['/app/a']));
  assert.deepEqual(untraced.factors, [1, 1]);
  assert.equal(untraced.fallback, 'no command was traced');
  const equal = computeDepgpo(input(cmds, ['/nothing']));
  assert.deepEqual(equal.factors, [1, 1]);
  assert.match(equal.fallback ?? '', /all step scores are equal \(0\)/);
  // Without fallback the same trajectory is singled out: s = [1 0], f = [2 0].
  close(computeDepgpo(input(cmds, ['/app/a'])).factors, [2, 0]);
});

test('f, Z and Â on a small group', () => {
  // s = [0.25 1 0.25 0.625]: m = 0.25, excess [0 0.75 0 0.375], mean 0.28125, f = [0 8/3 0 4/3].
  // tokens [100 50 25 25]: Z = (50·8/3 + 25·4/3)/200 = 5/6, f/Z = [0 3.2 0 1.6].
  const { factors, z } = stepFactors([0.25, 1, 0.25, 0.625], [100, 50, 25, 25]);
  close(factors, [0, 8 / 3, 0, 4 / 3]);
  assert.ok(Math.abs(z - 5 / 6) < 1e-12);
  // Group rewards [1 0 0.5 0.5]: mean 0.5, sample std √(0.5/3) = √(1/6), Â_0 = 0.5·√6 = √1.5.
  const adv = groupAdvantages([1, 0, 0.5, 0.5]);
  close(adv, [Math.sqrt(1.5), -Math.sqrt(1.5), 0, 0]);
  close(stepAdvantages(factors, z, adv[0]), [0, 3.2 * Math.sqrt(1.5), 0, 1.6 * Math.sqrt(1.5)]);
  // Token-weighted mean of Â_t equals Â_i: DepGPO only redistributes the trajectory's advantage.
  const at = stepAdvantages(factors, z, adv[0]);
  assert.ok(Math.abs((100 * at[0] + 50 * at[1] + 25 * at[2] + 25 * at[3]) / 200 - adv[0]) < 1e-12);
  // Without std normalisation: Â = R - mean.
  close(groupAdvantages([1, 0, 0.5, 0.5], { normalizeStd: false }), [0.5, -0.5, 0, 0]);
  // No relative signal: a group of one, or equal rewards.
  close(groupAdvantages([1]), [0]);
  close(groupAdvantages([0.7, 0.7]), [0, 0]);
});

test('malformed traces are repaired, never fatal', () => {
  const r = computeDepgpo(input([
    cmd(0, 'x', { writes: [{ path: '/app/a', hunks: [h(1, 0, 1, 2)], linesAfter: 2 }] }),
    // Claims the file had 5 lines before (untraced growth): padded with unowned lines, warned.
    cmd(1, 'y', { reads: ['/app/a'], writes: [{ path: '/app/a', hunks: [h(5, 1, 5, 1), { oldStart: -1 } as unknown as Hunk], linesAfter: 5 }] }),
    { step: 2, text: 'z', trace: { reads: 'nope' } as unknown as CommandTrace },
  ], ['/app/a']));
  assert.equal(r.warnings.length, 2);
  assert.deepEqual(edgeList(r), ['0->1:file:/app/a']);
  close(r.commandScores.map((c) => c.write ?? -1), [1, 1, -1]);
});

test('paths are normalised and repeated reads count once', () => {
  // "/app//x/" and "/app/x" are the same file; reading it twice makes one edge with one label.
  const r = computeDepgpo(input([
    cmd(0, 'w', { writes: [create('/app//x/', 2)] }),
    cmd(1, 'r', { reads: ['/app/x', '/app/./x', '/app/x'], writes: [create('/app/y', 1)] }),
  ], ['/app/y']));
  assert.deepEqual(edgeList(r), ['0->1:file:/app/x']);
  assert.equal(r.edges[0].labelCount, 1);
  close(r.commandScores.map((c) => c.score), [1, 1]);
});

test('stdout values match as whole values: not inside a longer number or name', () => {
  const m = new SubstringMatcher(['ab', 'b', 'abc', '/tmp/é', '80', '/tmp/build-1']);
  // "ab" inside "abc" and "b" inside "ab" continue a word: only the free-standing ones count.
  assert.deepEqual(m.find('ab b abc'), [0, 1, 2]);
  assert.deepEqual(m.find('xab'), []);
  assert.deepEqual(m.find('cp /tmp/é/out .'), [3]);
  assert.deepEqual(m.find('curl localhost:8080/x'), []);
  assert.deepEqual(m.find('curl localhost:80/x'), [4]);
  assert.deepEqual(m.find('ls /tmp/build-12/out'), []);
  assert.deepEqual(m.find('ls /tmp/build-1/out /tmp/build-1.log'), [5]);
  assert.deepEqual(new SubstringMatcher([]).find('anything'), []);
  // Same answer as a \b-anchored regex on random strings over a small alphabet (dense overlaps).
  const alphabet = 'ab-é';
  let seed = 7;
  const rand = (k: number) => ((seed = (seed * 1103515245 + 12345) % 2147483648) % k);
  const word = (len: number) => Array.from({ length: len }, () => alphabet[rand(alphabet.length)]).join('');
  const values = [...new Set(Array.from({ length: 40 }, () => word(1 + rand(4))))];
  const regex = (v: string) => new RegExp(`${/^\w/.test(v) ? '\\b' : ''}${v.replace(/[-]/g, '\\-')}${/\w$/.test(v) ? '\\b' : ''}`);
  const matcher = new SubstringMatcher(values);
  for (let i = 0; i < 300; i++) {
    const text = word(rand(14));
    assert.deepEqual(matcher.find(text).sort((a, b) => a - b), values.flatMap((v, id) => (regex(v).test(text) ? [id] : [])), text);
  }
});

test('a value that is only part of a longer value in the command makes no stdout edge', () => {
  // c0 prints port 80 and /tmp/build-1; c1 talks to port 8080 in /tmp/build-12: no edge, no read credit.
  const r = computeDepgpo(input([
    cmd(0, 'start', { stdoutValues: ['80', '/tmp/build-1'] }),
    cmd(1, 'curl localhost:8080 -o /tmp/build-12/out', { writes: [create('/tmp/build-12/out', 1)] }),
  ], ['/tmp/build-12/out']));
  assert.deepEqual(r.edges, []);
  close(r.commandScores.map((c) => c.score), [0, 1]);
});
