// Builds the stand-in base images named in sandbox/images.json when absent or when their recipe
// changed (the recipe hash is stored as an image label), so re-runs cost one `docker inspect` each.
// Before a build, sandbox/images/standin/ gets what the recipes copy in: the wheels they pin,
// downloaded here with the host's pip (the build then needs no registry), and the host's CA bundle
// (so pip and curl inside task builds trust what the host trusts, e.g. a TLS-intercepting proxy).
import { copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';

const only = process.argv.slice(2);
const map = JSON.parse(readFileSync('sandbox/images.json', 'utf8'));
const STANDIN = 'sandbox/images/standin';
const HOST_CA = ['/etc/ssl/certs/ca-certificates.crt', '/etc/pki/tls/certs/ca-bundle.crt'].find((p) => existsSync(p));

function prepareStandinDir(recipe) {
  mkdirSync(`${STANDIN}/wheels`, { recursive: true });
  if (HOST_CA) copyFileSync(HOST_CA, `${STANDIN}/host-ca.crt`);
  else if (!existsSync(`${STANDIN}/host-ca.crt`)) writeFileSync(`${STANDIN}/host-ca.crt`, '');
  if (!recipe.includes('standin/wheels')) return;
  const pins = [...new Set(recipe.match(/\b[A-Za-z0-9_.-]+==[0-9][A-Za-z0-9_.]*/g) ?? [])];
  const have = readdirSync(`${STANDIN}/wheels`).map((f) => f.toLowerCase());
  const missing = pins.filter((p) => { const [name, version] = p.toLowerCase().split('=='); return !have.some((f) => f.startsWith(`${name.replace(/-/g, '_')}-${version}-`)); });
  if (missing.length === 0) return;
  const arch = process.arch === 'arm64' ? 'aarch64' : 'x86_64';
  const pip = hostPip();
  if (!pip) {
    console.log('[setup] no pip on the host to download the stand-in wheels; the stand-in build will try PyPI itself');
    return;
  }
  const r = spawnSync(pip[0], [...pip.slice(1), 'download', '-q', '--only-binary=:all:', '--python-version', '3.11',
    '--platform', `manylinux_2_17_${arch}`, '--platform', `manylinux2014_${arch}`, '--platform', 'any', '-d', `${STANDIN}/wheels`, ...missing], { encoding: 'utf8' });
  // Without them the recipe installs from PyPI inside the build, where a registry is reachable.
  if (r.status !== 0) console.log(`[setup] could not download ${missing.join(' ')} on the host (${(r.stderr || r.error?.message || '').trim().split('\n').pop()}); the stand-in build will try PyPI itself`);
}

/** A pip to download with: the host's, the Ray venv's, or one in a throwaway venv. */
function hostPip() {
  const works = (cmd) => spawnSync(cmd[0], [...cmd.slice(1), '--version'], { encoding: 'utf8' }).status === 0;
  for (const cmd of [['python3', '-m', 'pip'], ['.venv/ray/bin/pip']]) if (works(cmd)) return cmd;
  const venv = '/tmp/tbrl-standin-pip';
  if (!existsSync(`${venv}/bin/pip`) && spawnSync('python3', ['-m', 'venv', venv]).status !== 0) return undefined;
  return works([`${venv}/bin/pip`]) ? [`${venv}/bin/pip`] : undefined;
}

for (const [tag, file] of Object.entries(map.standins)) {
  if (only.length && !only.includes(tag)) continue;
  const recipe = readFileSync(`sandbox/images/${file}`);
  const hash = createHash('sha256').update(recipe).digest('hex').slice(0, 16);
  const have = spawnSync('docker', ['image', 'inspect', '-f', '{{index .Config.Labels "tbrl.recipe"}}', tag], { encoding: 'utf8' });
  if (have.status === 0 && have.stdout.trim() === hash) continue;
  console.log(`[setup] building stand-in ${tag} from sandbox/images/${file}`);
  prepareStandinDir(recipe.toString('utf8'));
  const r = spawnSync('docker', ['build', '-q', '-t', tag, '--label', `tbrl.recipe=${hash}`, '-f', `sandbox/images/${file}`, 'sandbox/images'], { encoding: 'utf8' });
  if (r.status !== 0) {
    console.error(r.stderr.split('\n').slice(-20).join('\n'));
    console.error(`stand-in ${tag} failed to build; its recipe is sandbox/images/${file}`);
    process.exit(1);
  }
}
