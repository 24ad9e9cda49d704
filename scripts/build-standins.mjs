// Builds the stand-in base images named in sandbox/images.json when absent or when their recipe
// changed (the recipe hash is stored as an image label), so re-runs cost one `docker inspect` each.
import { readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';

const map = JSON.parse(readFileSync('sandbox/images.json', 'utf8'));
for (const [tag, file] of Object.entries(map.standins)) {
  const recipe = readFileSync(`sandbox/images/${file}`);
  const hash = createHash('sha256').update(recipe).digest('hex').slice(0, 16);
  const have = spawnSync('docker', ['image', 'inspect', '-f', '{{index .Config.Labels "tbrl.recipe"}}', tag], { encoding: 'utf8' });
  if (have.status === 0 && have.stdout.trim() === hash) continue;
  console.log(`[setup] building stand-in ${tag} from sandbox/images/${file}`);
  const r = spawnSync('docker', ['build', '-q', '-t', tag, '--label', `tbrl.recipe=${hash}`, '-f', `sandbox/images/${file}`, 'sandbox/images'], { encoding: 'utf8' });
  if (r.status !== 0) {
    console.error(r.stderr.split('\n').slice(-20).join('\n'));
    console.error(`stand-in ${tag} failed to build; its recipe is sandbox/images/${file}`);
    process.exit(1);
  }
}
