// `tbrl` itself (dist/cli.js): loads the CLI bundle (dist/cli-main.js) through a V8 code cache, so a
// start does not compile the 3 MB bundle again. Measured on the 2-core machine (CPU s, median of 10): `tbrl --version`
// 0.15 → 0.10 (0.22 before main.ts loaded the commands lazily), a command that loads everything (`tbrl eval`) 0.25 → 0.18; under a load
// average of 30 the same work is many times that in wall time, which is what a resume waits for.
// Node 20 has no module.enableCompileCache, hence this file. Only node: builtins here: it must stay small.
// TBRL_CODE_CACHE=0 loads the bundle plainly; TBRL_CODE_CACHE_DIR moves the cache (default ~/.cache/tbrl/v8).
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import Module, { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { Script } from 'node:vm';

type Main = (argv: string[]) => Promise<number>;

function cacheFile(bundle: string, command: string | undefined): string | undefined {
  if (process.env.TBRL_CODE_CACHE === '0') return undefined;
  // A script compiled through vm cannot `import()` (node-llama-cpp is ESM, imported by `tbrl serve`
  // only); serve is a long-lived server whose start is the model's load anyway.
  if (command === 'serve') return undefined;
  try {
    const st = statSync(bundle);
    // V8 refuses a cache made from other source or another V8 (cachedDataRejected); the name keeps builds and Node versions apart.
    const dir = process.env.TBRL_CODE_CACHE_DIR ?? join(homedir(), '.cache', 'tbrl', 'v8');
    return join(dir, `cli-${st.size}-${Math.floor(st.mtimeMs)}-${process.version}-${process.arch}.bin`);
  } catch {
    return undefined;
  }
}

function readCache(file: string | undefined): Buffer | undefined {
  if (!file) return undefined;
  try {
    return readFileSync(file);
  } catch {
    return undefined;
  }
}

/** Runs the bundle as a CommonJS module (its own module object, require and __dirname) and returns its exports. */
function loadBundle(bundle: string, command: string | undefined): { main: Main } {
  const file = cacheFile(bundle, command);
  // The cache holds what the run that wrote it compiled: `--version` compiles almost nothing, so it leaves the writing to a real command.
  const writeCache = command !== undefined && !['--version', '--help', '-h'].includes(command);
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- the bundle's path is known only at run time
  if (!file) return require(bundle) as { main: Main };
  const cached = readCache(file);
  const source = readFileSync(bundle, 'utf8').replace(/^#!.*/, '');
  const script = new Script(Module.wrap(source), {
    filename: bundle,
    ...(cached ? { cachedData: cached } : {}),
  });
  const mod = new Module(bundle, module);
  mod.filename = bundle;
  (mod as unknown as { paths: string[] }).paths = (Module as unknown as { _nodeModulePaths(d: string): string[] })._nodeModulePaths(dirname(bundle));
  const wrapper = script.runInThisContext() as (exports: unknown, require: NodeRequire, module: Module, filename: string, dirname: string) => void;
  wrapper.call(mod.exports, mod.exports, createRequire(bundle), mod, bundle, dirname(bundle));
  mod.loaded = true;
  if (writeCache && (!cached || script.cachedDataRejected)) {
    // Written at exit, so the functions this run compiled are in it too; atomically, since eight `tbrl run`s may start at once.
    process.once('exit', () => {
      try {
        mkdirSync(dirname(file), { recursive: true });
        const tmp = `${file}.${process.pid}.tmp`;
        writeFileSync(tmp, script.createCachedData());
        renameSync(tmp, file);
      } catch {
        /* no cache this time: the next start compiles again */
      }
    });
  }
  return mod.exports as { main: Main };
}

const argv = process.argv.slice(2);
loadBundle(join(__dirname, 'cli-main.js'), argv[0])
  .main(argv)
  .then(
    (code) => process.exit(code),
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
