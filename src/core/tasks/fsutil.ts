import { access, cp, mkdir, readdir } from 'node:fs/promises';
import { join } from 'node:path';

export async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}

/** Copy the entries of `from` into `to`, skipping top-level names in `skip`. */
export async function copyEntries(from: string, to: string, skip: ReadonlySet<string> = new Set()): Promise<string[]> {
  await mkdir(to, { recursive: true });
  const copied: string[] = [];
  for (const name of await readdir(from).catch(() => [] as string[])) {
    if (skip.has(name)) continue;
    await cp(join(from, name), join(to, name), { recursive: true, preserveTimestamps: true });
    copied.push(name);
  }
  return copied;
}
