import { existsSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { delimiter, dirname, join, resolve } from 'node:path';
import { TbrlError } from '../errors';

/** How to start `tbrl serve`: the Node arguments and the directory to start it in. */
export interface ServeCommand {
  /** Node arguments up to and including the CLI entry point (`serve ...` follows). */
  args: string[];
  /** The tbrl-studio install it runs from (its node_modules hold node-llama-cpp). */
  root: string;
  /** Where that install's node-llama-cpp package lies. */
  runtime: string;
  /** Why this install was picked (said in the run's log). */
  source: string;
}

export interface ServeRuntimeInputs {
  /** `tbrl.model.serverPath` / TBRL_SERVER_PATH: a tbrl-studio directory (or its `tbrl` executable). */
  serverPath?: string;
  /** The running code's own package root (the CLI install, a checkout, or the editor extension). */
  packageRoot: string;
  /** True when the running code is the TypeScript sources under tsx (tests, development). */
  fromSource: boolean;
  /** PATH, searched for a `tbrl` executable whose install has the runtime. */
  pathEnv?: string;
}

export const SERVER_PATH_ENV = 'TBRL_SERVER_PATH';

/**
 * `tbrl serve` needs node-llama-cpp, an ES module with a native addon that no bundle can carry:
 * the CLI loads it from its install's node_modules, and the editor's .vsix has no node_modules at
 * all. So the server runs from a tbrl-studio install that has it: the one named by
 * `tbrl.model.serverPath` / TBRL_SERVER_PATH, else the running code's own install, else the one
 * behind `tbrl` on PATH. None: an error that says so and how to fix it.
 */
export function resolveServeCommand(inputs: ServeRuntimeInputs): ServeCommand {
  const looked: string[] = [];
  if (inputs.serverPath) {
    const root = installRootOf(resolve(inputs.serverPath));
    const found = root && commandFor(root, inputs.fromSource && root === inputs.packageRoot, `${SERVER_PATH_ENV} / tbrl.model.serverPath (${inputs.serverPath})`);
    if (found) return found;
    throw new TbrlError('model-runtime-missing',
      `tbrl.model.serverPath (or ${SERVER_PATH_ENV}) is ${inputs.serverPath}, but ${root ? `the tbrl-studio install ${root} has no node-llama-cpp in its node_modules or no built CLI (dist/cli.js)` : 'that is not a tbrl-studio directory (no package.json named tbrl-studio in it or above it)'}.`,
      `Point it at a tbrl-studio directory where \`npm ci && npm run build\` has run (it holds node_modules/node-llama-cpp and dist/cli.js), or clear it to search the usual places.`);
  }
  const own = commandFor(inputs.packageRoot, inputs.fromSource, `this install (${inputs.packageRoot})`);
  if (own) return own;
  looked.push(`${inputs.packageRoot} (this install)`);
  for (const exe of executablesOnPath('tbrl', inputs.pathEnv)) {
    const root = installRootOf(exe);
    if (!root || root === inputs.packageRoot) continue;
    const found = commandFor(root, false, `the tbrl on PATH (${exe})`);
    if (found) return found;
    looked.push(`${root} (tbrl on PATH)`);
  }
  throw new TbrlError('model-runtime-missing',
    `tbrl serve needs node-llama-cpp (the native model runtime), which the editor extension (.vsix) does not carry, and no tbrl-studio install with it was found (looked in: ${looked.join('; ')}).`,
    `Install the CLI where you run the editor (clone tbrl-studio, then \`npm ci && npm run build\`) and set the setting tbrl.model.serverPath (or ${SERVER_PATH_ENV}) to its directory, or put its \`tbrl\` on PATH. Or set tbrl.model.baseUrl to an OpenAI-compatible endpoint (e.g. \`tbrl serve --port 8000\` started from the CLI), or run the oracle policy.`);
}

/** The serve command of a tbrl-studio install, when it has node-llama-cpp and an entry point it can run. */
function commandFor(root: string, fromSource: boolean, source: string): ServeCommand | undefined {
  const runtime = findPackage(root, 'node-llama-cpp');
  if (!runtime) return undefined;
  if (fromSource) {
    const main = join(root, 'src', 'cli', 'main.ts');
    if (existsSync(main) && findPackage(root, 'tsx')) return { args: ['--import', 'tsx', main], root, runtime, source };
  }
  const cli = join(root, 'dist', 'cli.js');
  if (existsSync(cli)) return { args: [cli], root, runtime, source };
  return undefined;
}

/** Node's lookup: `node_modules/<name>` in `from` or any directory above it. */
function findPackage(from: string, name: string): string | undefined {
  let dir = from;
  for (;;) {
    const candidate = join(dir, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return candidate;
    const up = dirname(dir);
    if (up === dir) return undefined;
    dir = up;
  }
}

/** The directory of the package.json named tbrl-studio at or above `path` (links followed). */
export function installRootOf(path: string): string | undefined {
  let dir: string;
  try {
    const real = realpathSync(path);
    dir = statSync(real).isDirectory() ? real : dirname(real);
  } catch {
    return undefined;
  }
  for (;;) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg)) {
      try {
        if ((JSON.parse(readFileSync(pkg, 'utf8')) as { name?: string }).name === 'tbrl-studio') return dir;
      } catch {
        /* not ours; keep walking */
      }
    }
    const up = dirname(dir);
    if (up === dir) return undefined;
    dir = up;
  }
}

function executablesOnPath(name: string, pathEnv: string | undefined): string[] {
  return (pathEnv ?? '').split(delimiter).filter(Boolean).map((d) => join(d, name)).filter((p) => {
    try {
      return statSync(p).isFile();
    } catch {
      return false;
    }
  });
}
