// Found by the chaos suite (test/chaos/bad-input.test.ts): a YAML alias without its anchor made
// the task loader throw a raw ReferenceError instead of a TbrlError that names the file.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TbrlError } from '../../src/core/errors';
import { parseYamlDoc } from '../../src/core/tasks/fields';

test('an alias without its anchor is a TASK_FILE_MALFORMED error naming the file and the fix', () => {
  for (const text of ['*\u0000', 'instruction: *missing\n', 'tags: [*a]\n']) {
    assert.throws(() => parseYamlDoc('/t/task.yaml', text, 'instruction: hi'), (err: unknown) => {
      assert.ok(err instanceof TbrlError, String(err));
      assert.equal(err.code, 'TASK_FILE_MALFORMED');
      assert.match(err.message, /\/t\/task\.yaml:1: task\.yaml cannot be read as YAML: Unresolved alias/);
      assert.match(err.fix ?? '', /anchor \(&name\) before its alias/);
      return true;
    });
  }
  // Anchors defined before use still work.
  assert.deepEqual(parseYamlDoc('/t/task.yaml', 'a: &x 1\nb: *x\n', '').data, { a: 1, b: 1 });
});
