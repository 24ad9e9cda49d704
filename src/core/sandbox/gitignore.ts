import { posix } from 'node:path';
import picomatch from 'picomatch';

/**
 * Caches and tool state that are never a change the user wants from an agent run, even in a
 * project without a .gitignore: a Python run leaves __pycache__/*.pyc behind.
 */
export const DEFAULT_WORKSPACE_IGNORES = [
  '.git/', '__pycache__/', '*.py[co]', '.pytest_cache/', '.mypy_cache/', '.ruff_cache/', '.hypothesis/',
  '.ipynb_checkpoints/', 'node_modules/.cache/', '.npm/_cacache/', '.cache/pip/', '.DS_Store',
];

interface Rule {
  base: string;
  negate: boolean;
  dirOnly: boolean;
  /** Matched against the path relative to base when the pattern has a slash, else against the name. */
  anchored: boolean;
  match: (path: string) => boolean;
}

function parseRules(text: string, base: string): Rule[] {
  const rules: Rule[] = [];
  for (const raw of text.split(/\r?\n/)) {
    let line = raw.replace(/(?<!\\)\s+$/, '');
    if (!line || line.startsWith('#')) continue;
    const negate = line.startsWith('!');
    if (negate) line = line.slice(1);
    const dirOnly = line.endsWith('/');
    line = line.replace(/\/+$/, '');
    if (!line) continue;
    const anchored = line.includes('/');
    const pattern = line.replace(/^\/+/, '').replace(/\\(.)/g, '$1');
    rules.push({ base, negate, dirOnly, anchored, match: picomatch(pattern, { dot: true }) });
  }
  return rules;
}

/**
 * `.gitignore` semantics for a list of file paths (no file system walk): the default ignores, then
 * each .gitignore from the root down (deeper files win), last matching rule wins, `!` re-includes,
 * `dir/` matches directories only, and nothing inside an ignored directory comes back.
 */
export function gitignoreMatcher(gitignores: Map<string, string>, defaults: string[] = DEFAULT_WORKSPACE_IGNORES): (path: string) => boolean {
  const files = [...gitignores.keys()].sort((a, b) => a.split('/').length - b.split('/').length || a.localeCompare(b));
  const rules = [
    ...parseRules(defaults.join('\n'), ''),
    ...files.flatMap((f) => parseRules(gitignores.get(f)!, posix.dirname(f) === '.' ? '' : posix.dirname(f))),
  ];
  const decide = (path: string, isDir: boolean): boolean => {
    let ignored = false;
    for (const r of rules) {
      if (r.dirOnly && !isDir) continue;
      if (r.base && !path.startsWith(`${r.base}/`)) continue;
      const rel = r.base ? path.slice(r.base.length + 1) : path;
      if (r.match(r.anchored ? rel : posix.basename(rel))) ignored = !r.negate;
    }
    return ignored;
  };
  return (path) => {
    const parts = path.split('/');
    for (let i = 1; i < parts.length; i++) if (decide(parts.slice(0, i).join('/'), true)) return true;
    return decide(path, false);
  };
}
