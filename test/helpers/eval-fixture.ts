import { cpSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const HELLO = resolve(__dirname, '..', '..', 'examples', 'hello-world');

/**
 * Task directories for eval tests, copies of examples/hello-world: `pass-*` keep the reference
 * solution (the oracle passes), `fail-*` get a solution that does nothing (the tests fail).
 */
export function makeEvalTasks(names: string[], root = mkdtempSync(join(tmpdir(), 'tbrl-eval-tasks-'))): string {
  for (const name of names) {
    const dir = join(root, name);
    cpSync(HELLO, dir, { recursive: true });
    if (name.startsWith('fail')) writeFileSync(join(dir, 'solution.sh'), '#!/bin/bash\ntrue\n');
  }
  return root;
}
