import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { computeDepgpo } from '../../src/core/depgpo/compute';
import { referenceDepgpo } from '../../src/core/depgpo/reference';
import type { DepgpoCommand, DepgpoInput } from '../../src/core/depgpo/types';
import type { FileWrite, Hunk } from '../../src/core/trace/types';
import { Prng } from '../../src/core/synth/prng';

// The fast implementation (run-length provenance, Aho–Corasick, backward reach sweep) must agree with
// the plain per-line reference on every well-formed trajectory.

/** The studio's seeded PRNG (mulberry32), as a bare draw function. */
function rng(seed: number): () => number {
  const prng = new Prng(seed);
  return () => prng.next();
}

function randomTrajectory(seed: number): DepgpoInput {
  const r = rng(seed);
  const int = (lo: number, hi: number): number => lo + Math.floor(r() * (hi - lo + 1));
  const pick = <T>(xs: T[], p: number): T[] => xs.filter(() => r() < p);
  const files = ['/app/a', '/app/b', '/app/c', '/app/d'];
  const values = ['/tmp/v1', '/tmp/v2', 'port-4242', 'id-77'];
  const length = new Map<string, number>();
  const commands: DepgpoCommand[] = [];
  let step = 0;
  const n = int(1, 14);
  for (let c = 0; c < n; c++) {
    step += int(0, 1);
    // An untraced command changes nothing the graph can see; its writes must not enter `length` either.
    const traced = r() < 0.95;
    const writes: FileWrite[] = [];
    for (const path of traced ? pick(files, 0.35) : []) {
      const L = length.get(path);
      if (L === undefined) {
        const lines = int(1, 6);
        writes.push({ path, hunks: [{ oldStart: 0, oldLines: 0, newStart: 1, newLines: lines }], created: true, linesAfter: lines });
        length.set(path, lines);
      } else if (r() < 0.1) {
        writes.push({ path, hunks: [], deleted: true, linesAfter: 0 });
        length.delete(path);
      } else {
        const hunks: Hunk[] = [];
        let pos = 0;
        let growth = 0;
        for (let k = int(1, 3); k > 0 && pos <= L; k--) {
          const skip = int(hunks.length === 0 ? 0 : 1, Math.max(hunks.length === 0 ? 0 : 1, L - pos));
          if (pos + skip > L) break;
          const oldLines = int(0, Math.min(3, L - pos - skip));
          const newLines = oldLines === 0 ? int(1, 3) : int(0, 3);
          const before = pos + skip;
          hunks.push({ oldStart: oldLines === 0 ? before : before + 1, oldLines, newStart: newLines === 0 ? before + growth : before + growth + 1, newLines });
          pos = before + oldLines;
          growth += newLines - oldLines;
        }
        if (hunks.length === 0) continue;
        writes.push({ path, hunks, linesAfter: L + growth });
        length.set(path, L + growth);
      }
    }
    commands.push({
      step,
      text: pick(values, 0.3).join(' ') + ' cmd',
      ...(traced
        ? { trace: { reads: pick(files, 0.3), writes, stdoutValues: pick(values, 0.3), ports: pick([80, 81], 0.15), processes: pick(['1:a', '2:b'], 0.15) } }
        : {}),
    });
  }
  return {
    commands,
    instruction: r() < 0.5 ? `use ${values[int(0, 3)]}` : 'do it',
    verifier: { reads: pick(files, 0.5), writes: pick(files, 0.15), ports: pick([80, 81], 0.3), processes: pick(['1:a', 'b'], 0.3) },
    stepTokens: Array.from({ length: step + 1 }, () => int(0, 50)),
  };
}

test('fast DepGPO equals the per-line reference on random trajectories', () => {
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 2 ** 31 - 1 }), (seed) => {
      const input = randomTrajectory(seed);
      const fast = computeDepgpo(input);
      const ref = referenceDepgpo(input);
      assert.deepEqual(fast.warnings, []);
      const key = (e: [number, number, string]) => e.join(',');
      assert.deepEqual(fast.edges.map((e) => key([e.from, e.to, e.kind])).sort(), ref.edges.map(key).sort());
      fast.commandScores.forEach((s, i) => assert.ok(Math.abs(s.score - ref.scores[i]) < 1e-12, `command ${i}: ${s.score} vs ${ref.scores[i]}`));
      fast.stepScores.forEach((s, i) => assert.ok(Math.abs(s - ref.stepScores[i]) < 1e-12, `step ${i}`));
      fast.factors.forEach((f, i) => assert.ok(Math.abs(f - ref.factors[i]) < 1e-9, `factor ${i}: ${f} vs ${ref.factors[i]}`));
    }),
    { numRuns: 400 },
  );
});

test('the graph is acyclic: every edge points forward in time', () => {
  for (let seed = 1; seed <= 200; seed++) for (const e of computeDepgpo(randomTrajectory(seed)).edges) assert.ok(e.from < e.to);
});
