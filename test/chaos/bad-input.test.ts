/**
 * Bad input, property-based: task files, devcontainer.json, trajectory files and model answers
 * mutated at random. Nothing may escape as anything but a TbrlError naming cause and fix, and a
 * cut trajectory must never look complete. (Turn parsing itself is fuzzed 10,000 times in
 * test/unit/actions-fuzz.test.ts; turns *executed* on a real sandbox are in actions-live.test.ts.)
 */
import { after } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { tmpdir } from 'node:os';
import fc from 'fast-check';
import { TbrlError } from '../../src/core/errors';
import { loadTask } from '../../src/core/tasks/load';
import { parseDevcontainer } from '../../src/core/sandbox/devcontainer-config';
import { parseTrajectory } from '../../src/core/trajectory/reader';
import { TrajectoryWriter } from '../../src/core/trajectory/writer';
import { TRAJECTORY_SCHEMA, type StepRecord, type TrajectoryFooter, type TrajectoryHeader } from '../../src/core/trajectory/schema';
import { ModelClient } from '../../src/core/model/client';
import { startOpenAIServer } from '../helpers/openai-server';
import { chaosCase } from './helpers/chaos';

const scratch = mkdtempSync(join(tmpdir(), 'tbrl-chaos-input-'));
after(() => rmSync(scratch, { recursive: true, force: true }));
const SEED = Number(process.env.TBRL_FUZZ_SEED ?? 20261130);

/** Mutations of a config text: cut it, drop/duplicate a line, splice junk, retype a value. */
function mutated(original: string): fc.Arbitrary<string> {
  const lines = original.split('\n');
  const junk = fc.oneof(
    fc.constantFrom('', ':', '- ', '"', "'", '[', ']]', '{', '}', '=', '\t', '\u0000', '\uFEFF', '# x', 'null', '~', '[[task]]', '!!binary', '*a', '&a', '<<: *a', '1e999', 'true', '  key: [', '"\\u12"'),
    fc.string({ maxLength: 20 }),
  );
  return fc.oneof(
    fc.nat(original.length).map((n) => original.slice(0, n)),
    fc.nat(lines.length - 1).map((i) => lines.filter((_, j) => j !== i).join('\n')),
    fc.nat(lines.length - 1).map((i) => [...lines.slice(0, i + 1), lines[i], ...lines.slice(i + 1)].join('\n')),
    fc.tuple(fc.nat(original.length), junk).map(([n, j]) => original.slice(0, n) + j + original.slice(n)),
    fc.tuple(fc.nat(lines.length - 1), junk).map(([i, j]) => lines.map((l, k) => (k === i ? l.replace(/([:=]\s*).*$/, `$1${j}`) : l)).join('\n')),
    fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b).toString('latin1')),
  );
}

/** A clear error: TbrlError with a code, the file named, and a fix. */
function assertClear(err: unknown, file: RegExp): void {
  assert.ok(err instanceof TbrlError, `not a TbrlError: ${String((err as Error)?.stack ?? err)}`);
  assert.ok(err.code, 'no code');
  assert.ok(err.fix && err.fix.length > 10, `no fix: ${err.message}`);
  assert.match(err.message, file, `the file is not named: ${err.message}`);
}

async function fuzzTaskFile(srcDir: string, file: string, runs: number, seed: number): Promise<string> {
  const dir = join(scratch, file.replace('.', '-'));
  cpSync(resolve(srcDir), dir, { recursive: true });
  const original = readFileSync(join(dir, file), 'utf8');
  let ok = 0;
  let errors = 0;
  const codes = new Set<string>();
  await fc.assert(fc.asyncProperty(mutated(original), async (text) => {
    writeFileSync(join(dir, file), text);
    try {
      const task = await loadTask(dir);
      assert.equal(typeof task.instruction, 'string');
      ok++;
    } catch (err) {
      assertClear(err, new RegExp(`${file.replace('.', '\\.')}|${dir}`));
      codes.add((err as TbrlError).code);
      errors++;
    }
  }), { numRuns: runs, seed });
  return `${runs} mutations: ${ok} still loaded, ${errors} clear TbrlErrors (${[...codes].sort().join(', ')}), 0 crashes`;
}

chaosCase('task.yaml (Terminal-Bench) mutated 300× (cut, dropped/duplicated lines, junk, retyped values)', 'loads, or a TbrlError naming the file, with a fix',
  () => fuzzTaskFile('examples/hello-world', 'task.yaml', 300, SEED));

chaosCase('task.toml (Harbor) mutated 300×', 'loads, or a TbrlError naming the file, with a fix',
  () => fuzzTaskFile('test/fixtures/tasks/harbor-csv-stats', 'task.toml', 300, SEED + 1));

chaosCase('devcontainer.json mutated 300×', 'parses, or DEVCONTAINER_INVALID naming the file and position, with an example', async () => {
  const ws = join(scratch, 'ws');
  mkdirSync(join(ws, '.devcontainer'), { recursive: true });
  writeFileSync(join(ws, '.devcontainer', 'Dockerfile'), 'FROM debian:bookworm-slim\n');
  const original = `{
  // a comment
  "name": "demo",
  "build": { "dockerfile": "Dockerfile", "context": ".", "args": { "V": "1" } },
  "workspaceFolder": "/workspaces/demo",
  "containerEnv": { "A": "\${localEnv:HOME}" },
  "mounts": ["source=\${localWorkspaceFolder},target=/src,type=bind"],
  "postCreateCommand": ["echo", "hi"],
}`;
  const path = join(ws, '.devcontainer', 'devcontainer.json');
  let ok = 0;
  let errors = 0;
  await fc.assert(fc.property(mutated(original), (text) => {
    writeFileSync(path, text);
    try {
      parseDevcontainer(ws, path);
      ok++;
    } catch (err) {
      assertClear(err, /devcontainer\.json/);
      errors++;
    }
  }), { numRuns: 300, seed: SEED + 2 });
  return `300 mutations: ${ok} parsed, ${errors} DevcontainerErrors, 0 crashes`;
});

// --- trajectories -------------------------------------------------------------------------------

function header(schema = TRAJECTORY_SCHEMA): TrajectoryHeader {
  return {
    type: 'header', schema, runId: 'chaos-traj', startedAt: new Date(0).toISOString(),
    task: { id: 't', dir: '/t', format: 'terminal-bench', instruction: 'do it — ünïcode ✓' },
    policy: { kind: 'scripted' }, config: {}, versions: { tbrl: '0', node: process.version },
  };
}
function step(index: number): StepRecord {
  return {
    type: 'step', index, startedAt: new Date(index).toISOString(), durationMs: 5, candidates: [], chosenText: `<bash>\ncmd: echo ${index} "ünï ✓"\n</bash>`,
    actions: [{ kind: 'bash', input: { cmd: `echo ${index}` }, observation: `${index}\n`, ok: true, exitCode: 0, durationMs: 3 }],
    parseErrors: [], usage: { promptTokens: 1, completionTokens: 1 }, todos: [], scratchpad: [],
  };
}
const footer: TrajectoryFooter = { type: 'footer', endedAt: new Date(9).toISOString(), endReason: 'finished', steps: 3, usage: { promptTokens: 3, completionTokens: 3, verifierCalls: 0, verifierOutputTokens: 0 } };

function writtenTrajectory(): Buffer {
  const path = join(scratch, `traj-${Math.random().toString(36).slice(2)}.jsonl`);
  const w = TrajectoryWriter.create(path, header());
  for (let i = 0; i < 3; i++) w.appendStep(step(i));
  w.writeFooter(footer);
  return readFileSync(path);
}

chaosCase('trajectory cut at every byte offset (a kill mid-write)', 'completed lines kept; a footer only when the footer line is whole; otherwise the reader says "interrupted"', async () => {
  const full = writtenTrajectory();
  const text = full.toString('utf8');
  const lineEnds = [...text.matchAll(/\n/g)].map((m) => Buffer.byteLength(text.slice(0, m.index)));
  const footerStart = lineEnds[3] + 1;
  const footerJsonEnd = lineEnds[4];
  let interrupted = 0;
  let noHeader = 0;
  for (let cut = 0; cut <= full.length; cut++) {
    // A cut inside a multi-byte character decodes to U+FFFD, as a real partial read would.
    const part = full.subarray(0, cut).toString('utf8');
    let t;
    try {
      t = parseTrajectory(part, 'cut.jsonl');
    } catch (err) {
      assertClear(err, /cut\.jsonl/);
      assert.ok(cut <= lineEnds[0], `only a cut header may fail, not a cut at ${cut}: ${(err as Error).message}`);
      noHeader++;
      continue;
    }
    const completeSteps = lineEnds.slice(1, 4).filter((e) => e < cut).length;
    if (cut >= footerJsonEnd) {
      assert.ok(t.footer, `footer lost at ${cut}`);
    } else {
      assert.equal(t.footer, undefined, `a cut at ${cut} (footer starts at ${footerStart}) looks complete`);
      assert.ok(t.warnings.some((w) => /interrupted/.test(w)), `no "interrupted" warning at ${cut}`);
      interrupted++;
    }
    assert.ok(t.steps.length >= completeSteps && t.steps.length <= completeSteps + 1, `cut ${cut}: ${t.steps.length} steps, ${completeSteps} complete`);
  }
  return `${full.length + 1} cuts: ${noHeader} inside the header → trajectory-no-header error; ${interrupted} read as interrupted (no footer, every whole step kept); the rest complete`;
});

chaosCase('trajectory with a corrupted line in the middle (200 random byte flips)', 'trajectory-corrupt error naming the line, or still-valid JSON kept; never a crash', async () => {
  const full = writtenTrajectory();
  const text = full.toString('utf8');
  const secondLine = text.indexOf('\n') + 1;
  const lastLine = text.lastIndexOf('\n', text.length - 2);
  let corrupt = 0;
  let kept = 0;
  fc.assert(fc.property(fc.integer({ min: secondLine, max: lastLine - 1 }), fc.integer({ min: 0, max: 255 }), (at, byte) => {
    const b = Buffer.from(full);
    if (b[at] === 0x0a) return; // a newline split is the truncation case
    b[at] = byte === 0x0a ? 0x00 : byte;
    try {
      parseTrajectory(b.toString('utf8'), 'bad.jsonl');
      kept++;
    } catch (err) {
      assertClear(err, /bad\.jsonl(: line \d+)?/);
      assert.ok(['trajectory-corrupt', 'trajectory-shape', 'trajectory-no-header', 'trajectory-schema', 'trajectory-version'].includes((err as TbrlError).code), (err as TbrlError).code);
      corrupt++;
    }
  }), { numRuns: 200, seed: SEED + 3 });
  return `200 flips: ${corrupt} rejected with a line number, ${kept} still valid JSON and read`;
});

chaosCase('trajectory with schema tbrl.trajectory/2.0, 0.9, "garbage"; and 1.7 (newer minor)', 'major ≠ 1 → trajectory-version with upgrade/convert fix; unknown → trajectory-schema; newer minor reads', async () => {
  const body = (schema: string) => [header(schema), step(0), footer].map((l) => JSON.stringify(l)).join('\n') + '\n';
  const seen: string[] = [];
  for (const [schema, code, fix] of [['tbrl.trajectory/2.0', 'trajectory-version', /Upgrade tbrl/], ['tbrl.trajectory/0.9', 'trajectory-version', /Convert/], ['garbage', 'trajectory-schema', /tbrl run/]] as const) {
    assert.throws(() => parseTrajectory(body(schema), 'v.jsonl'), (err: unknown) => {
      assertClear(err, /v\.jsonl/);
      assert.equal((err as TbrlError).code, code);
      assert.match((err as TbrlError).fix!, fix);
      seen.push(`${schema}→${code}`);
      return true;
    });
  }
  const newer = parseTrajectory(body('tbrl.trajectory/1.7'), 'v.jsonl');
  assert.equal(newer.steps.length, 1);
  return `${seen.join('; ')}; 1.7 read (1 step)`;
});

// --- model server answers -----------------------------------------------------------------------

chaosCase('model server answers: malformed JSON, empty choices, wrong n (fewer / more), 5 MB content', 'retried then model-malformed-answer naming the endpoint; fewer choices topped up; extra choices dropped; huge content returned intact', async () => {
  const srv = await startOpenAIServer({ models: ['m'] });
  try {
    const client = new ModelClient({ baseUrl: srv.baseUrl, model: 'm', maxRetries: 2 }, { retryBaseMs: 5, retryMaxMs: 20 });
    const msgs = [{ role: 'user' as const, content: 'hi' }];
    const out: string[] = [];

    srv.enqueue({ malformed: true }, { malformed: true }, { malformed: true });
    await assert.rejects(client.sample(msgs), (err: unknown) => {
      assertClear(err, new RegExp(srv.baseUrl.replace(/[/.]/g, '\\$&')));
      assert.equal((err as TbrlError).code, 'model-malformed-answer');
      assert.match((err as Error).message, /3 attempts/);
      return true;
    });
    out.push('malformed×3 → model-malformed-answer after 3 attempts');

    srv.enqueue({ emptyChoices: true }, 'recovered');
    const r1 = await client.sample(msgs);
    assert.equal(r1.completions[0].text, 'recovered');
    out.push('empty choices then ok → retried, recovered');

    srv.enqueue({ emptyChoices: true }, { emptyChoices: true }, { emptyChoices: true });
    await assert.rejects(client.sample(msgs), /no choices/);
    out.push('empty×3 → stated failure "no choices"');

    srv.enqueue(['only one'], 'top-up a', 'top-up b');
    const fewer = await client.sample(msgs, 3);
    assert.equal(fewer.completions.length, 3);
    out.push(`n=3, 1 returned → topped up to ${fewer.completions.length}`);

    srv.enqueue(['a', 'b', 'c', 'd', 'e']);
    const more = await new ModelClient({ baseUrl: srv.baseUrl, model: 'm' }).sample(msgs, 2);
    assert.deepEqual(more.completions.map((c) => c.text), ['a', 'b']);
    out.push('n=2, 5 returned → 2 kept');

    const huge = 'x'.repeat(5 * 1024 * 1024);
    srv.enqueue(huge);
    const big = await client.sample(msgs);
    assert.equal(big.completions[0].text.length, huge.length);
    out.push('5 MB content → returned intact (the loop bounds it when executing)');
    return out.join('; ');
  } finally {
    await srv.close();
  }
});
