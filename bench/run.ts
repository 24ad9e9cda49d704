/**
 * `npm run bench`: every benchmark in bench/, one after another (they measure wall time, so they
 * must not share the machine with each other). Each prints its own ratio against its baseline.
 * `npm run bench -- sandbox depgpo` runs only those.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

const only = process.argv.slice(2);
const files = readdirSync(__dirname)
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => only.length === 0 || only.some((o) => f.startsWith(o)))
  .sort();
let failed = 0;
for (const f of files) {
  console.log(`\n### ${f}\n`);
  const r = spawnSync(process.execPath, ['--import', 'tsx', join(__dirname, f)], { stdio: 'inherit' });
  if (r.status !== 0) {
    failed++;
    console.error(`${f} exited with ${r.status ?? r.signal}`);
  }
}
process.exit(failed ? 1 : 0);
