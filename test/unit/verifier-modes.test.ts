import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { cheaperModes, findVerifierMode, VERIFIER_MODE_DEFINITIONS, VERIFIER_MODES } from '../../src/core/verifier/modes';
import { VERIFIER_PROMPT_VERSION } from '../../src/core/verifier/prompts';
import { parseVerifierMode } from '../../src/core/verifier/config';
import { VERIFIER_MODE_VALUES } from '../../src/extension/settings';
import { RUN_POLICY_USAGE } from '../../src/cli/run-options';
import { runCommand } from '../../src/cli/commands/run';

const pkg = JSON.parse(readFileSync('package.json', 'utf8'));

/** Every `enum` in the manifest, with where it is. */
function enums(node: unknown, path: string[] = [], out: Array<{ path: string; values: unknown[] }> = []) {
  if (Array.isArray(node)) node.forEach((v, i) => enums(v, [...path, String(i)], out));
  else if (node && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) {
      if (k === 'enum' && Array.isArray(v)) out.push({ path: path.join('.'), values: v });
      else enums(v, [...path, k], out);
    }
  }
  return out;
}

test('package.json: the three verifier enums are exactly none + the registered modes, and no other enum names a mode', () => {
  const props = pkg.contributes.configuration.properties;
  const launch = pkg.contributes.debuggers.find((d: { type: string }) => d.type === 'tbrl').configurationAttributes.launch.properties;
  const expected = ['none', ...VERIFIER_MODES];
  assert.deepEqual(props['tbrl.verifier.mode'].enum, expected, 'tbrl.verifier.mode');
  assert.deepEqual(props['tbrl.model.profiles'].additionalProperties.properties.verifier.enum, expected, 'tbrl.model.profiles.*.verifier');
  assert.deepEqual(launch.verifier.enum, expected, 'launch configuration "verifier"');
  // A mode registered but missing from an enum, or an enum listing a mode that is not registered,
  // shows up here as an enum that shares a value with the list but differs from it.
  const known = new Set<unknown>([...VERIFIER_MODES, 'listwise', 'pointwise', 'pairwise', 'decision-only']);
  const naming = enums(pkg).filter((e) => e.values.some((v) => known.has(v)));
  assert.equal(naming.length, 3, naming.map((e) => e.path).join('\n'));
  for (const e of naming) assert.deepEqual(e.values, expected, e.path);
});

test('the registry: unique ids and aliases, a prompt file per mode, and every front end lists exactly its modes', () => {
  const spellings = VERIFIER_MODE_DEFINITIONS.flatMap((m) => [m.id, ...(m.aliases ?? [])]);
  assert.equal(new Set(spellings).size, spellings.length);
  assert.equal(new Set(VERIFIER_MODE_DEFINITIONS.map((m) => m.costRank)).size, VERIFIER_MODE_DEFINITIONS.length, 'cost ranks order the modes');
  for (const m of VERIFIER_MODE_DEFINITIONS) {
    assert.ok(existsSync(join('src/core/prompts', `verifier-${m.prompt}-${VERIFIER_PROMPT_VERSION}.md`)), `prompt file for ${m.id}`);
    assert.equal(parseVerifierMode(m.id.toUpperCase()), m.id);
    for (const a of m.aliases ?? []) assert.equal(findVerifierMode(a), m.id);
  }
  assert.equal(findVerifierMode('best-of'), undefined);
  assert.deepEqual([...VERIFIER_MODE_VALUES], ['none', ...VERIFIER_MODES]);
  const flag = `[--verifier ${VERIFIER_MODES.join('|')}]`;
  assert.ok(RUN_POLICY_USAGE.some((l) => l.includes(flag)), RUN_POLICY_USAGE.join('\n'));
  assert.ok(runCommand.usage.includes(flag), runCommand.usage);
});

test('token budget step-down chain follows cost ranks and skips pointwise (it repeats the history K times)', () => {
  assert.deepEqual(Object.fromEntries(VERIFIER_MODES.map((m) => [m, cheaperModes(m)])), {
    pairwise: ['listwise', 'decision-only'],
    pointwise: ['listwise', 'decision-only'],
    listwise: ['decision-only'],
    'decision-only': [],
  });
});
