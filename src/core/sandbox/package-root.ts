import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

let cached: string | undefined;

/**
 * The directory holding tbrl-studio's package.json, found by walking up from this file: it is
 * src/core/sandbox under tsx and dist/ in the bundles, and `sandbox/` assets live beside package.json.
 */
export function packageRoot(): string {
  if (cached) return cached;
  let dir = __dirname;
  for (;;) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg)) {
      try {
        if ((JSON.parse(readFileSync(pkg, 'utf8')) as { name?: string }).name === 'tbrl-studio') return (cached = dir);
      } catch {
        /* keep walking */
      }
    }
    const up = dirname(dir);
    if (up === dir) return (cached = process.cwd());
    dir = up;
  }
}
