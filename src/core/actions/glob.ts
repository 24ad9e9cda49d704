/**
 * Glob for `search.glob`: the container lists files with `find` (fast, no dependencies in the
 * image), the matching happens here with picomatch, so `/` and `**` behave the same in every
 * image whatever its shell or find version.
 */
import picomatch from 'picomatch';
import { posix } from 'node:path';

export interface GlobPlan {
  /** Absolute directory whose files are listed. */
  root: string;
  /** The pattern relative to `root`. */
  pattern: string;
}

/** Narrow the listing to the pattern's literal prefix (`src/**\/*.ts` lists only `src`). */
export function planGlob(pattern: string, cwd: string, path?: string): GlobPlan {
  const base = posix.resolve(cwd, path ?? '.');
  const scan = picomatch.scan(pattern);
  if (!scan.isGlob) {
    // A plain path: match it exactly, relative to its parent.
    const abs = posix.resolve(base, pattern);
    return { root: posix.dirname(abs), pattern: posix.basename(abs) };
  }
  const root = scan.base ? posix.resolve(base, scan.base) : base;
  return { root, pattern: scan.glob };
}

const ALWAYS_PRUNED = ['/proc', '/sys', '/dev'];
const PRUNED_NAMES = ['.git', 'node_modules', '__pycache__'];

/** argv for listing files under `root`; heavy directories are skipped unless the pattern names them. */
export function findArgv(root: string, pattern: string): string[] {
  const names = PRUNED_NAMES.filter((n) => !pattern.includes(n));
  const prune: string[] = [];
  for (const p of ALWAYS_PRUNED) prune.push(...(prune.length ? ['-o'] : []), '-path', p);
  for (const n of names) prune.push('-o', '-name', n);
  // A trailing slash makes find descend into a root that is a symlink to a directory.
  return ['find', root === '/' ? '/' : `${root}/`, '(', ...prune, ')', '-prune', '-o', '(', '-type', 'f', '-o', '-type', 'l', ')', '-print'];
}

export interface GlobMatch {
  matches: string[];
  /** True when nothing matched at the top and the pattern was retried against file names at any depth. */
  byBasename: boolean;
}

/** Match absolute paths listed under `root`; results are absolute and sorted. */
export function matchGlob(listed: string[], plan: GlobPlan): GlobMatch {
  const rel = listed
    .filter((p) => p !== '' && p !== plan.root)
    .map((p) => ({ abs: p, rel: posix.relative(plan.root, p) }))
    .filter((x) => x.rel !== '' && !x.rel.startsWith('..'));
  const isMatch = picomatch(plan.pattern);
  let matches = rel.filter((x) => isMatch(x.rel)).map((x) => x.abs);
  let byBasename = false;
  if (matches.length === 0 && !plan.pattern.includes('/')) {
    const byName = picomatch(plan.pattern, { basename: true });
    matches = rel.filter((x) => byName(x.rel)).map((x) => x.abs);
    byBasename = matches.length > 0;
  }
  return { matches: matches.sort(), byBasename };
}

/** Names filtered out of `search.ls` by its `ignore` patterns. */
export function ignoreFilter(ignore: string[]): (name: string) => boolean {
  if (ignore.length === 0) return () => false;
  const m = picomatch(ignore, { dot: true });
  return (name) => m(name);
}
