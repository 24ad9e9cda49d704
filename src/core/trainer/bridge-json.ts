import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { TbrlError, errorMessage } from '../errors';
import { packageRoot } from '../sandbox/package-root';

/** A file the Python bridge ships in tbrl_bridge/ and TypeScript reads too (presets.json, algorithms.json). */
export function bridgeFile(name: string, bridgeDir = join(packageRoot(), 'trainer-bridge')): string {
  return join(bridgeDir, 'tbrl_bridge', name);
}

/** Parses one of those files, or fails with `code` naming what it holds (`what`) and the file. */
export function readBridgeJson<T>(file: string, code: string, what: string): T {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as T;
  } catch (err) {
    throw new TbrlError(code, `Cannot read ${what} ${file}: ${errorMessage(err)}`, 'Run from a TBRL Studio checkout or installation (it ships trainer-bridge/).');
  }
}
