import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ESLint } from 'eslint';

// The lint rule that keeps webview code a browser bundle (eslint.config.mjs): types from src/core
// are fine, values from it, anything from the extension host or Node are refused.
test('webview code may import types from src/core, but no core values, no src/extension, no Node', async () => {
  const eslint = new ESLint();
  const source = [
    "import type { StepRecord } from '../../src/core/trajectory/schema';",
    "import { readTrajectory } from '../../src/core/trajectory/reader';",
    "import type { LaunchArgs } from '../../src/extension/debug/launch-args';",
    "import { readFileSync } from 'node:fs';",
    'export const probe = [readTrajectory, readFileSync, process.env] as unknown as StepRecord & LaunchArgs;',
    '',
  ].join('\n');
  const [result] = await eslint.lintText(source, { filePath: 'webview/step-inspector/probe.ts' });
  const flagged = result.messages.map((m) => `${m.line}:${m.ruleId}`);
  assert.deepEqual(flagged, ['2:@typescript-eslint/no-restricted-imports', '3:@typescript-eslint/no-restricted-imports', '4:@typescript-eslint/no-restricted-imports', '5:no-restricted-globals']);
  // The same imports are fine in host code.
  const [host] = await eslint.lintText(source, { filePath: 'src/extension/probe.ts' });
  assert.deepEqual(host.messages.filter((m) => m.ruleId?.includes('restricted')), []);
});
