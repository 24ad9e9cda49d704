/**
 * The "share no code" gate: grader, strict verifier and reference solver must be independent
 * programs, so a bug (or a leak) in one cannot make the others agree with it. Checked mechanically:
 * no component names another's file, no normalised code line of substance appears in two of them,
 * and no function body (normalised, hashed) appears in two.
 */
export interface Component { name: string; file: string; text: string }

export interface ShareFinding { between: [string, string]; kind: 'reference' | 'import' | 'line' | 'function'; detail: string }

/** Modules a component may import: the standard library it needs. A shared helper module would be shared code. */
export const ALLOWED_IMPORTS = new Set(['csv', 'functools', 'hashlib', 'json', 'os', 'pathlib', 'shutil', 'sqlite3', 'struct', 'subprocess', 'sys', 'tempfile', 'collections', 're', 'math', 'itertools', 'decimal', 'datetime', 'threading', 'pytest']);

function importedModules(text: string): string[] {
  const out: string[] = [];
  for (const line of text.split('\n')) {
    const m = /^\s*(?:import\s+([\w.]+(?:\s*,\s*[\w.]+)*)|from\s+([\w.]+)\s+import\b)/.exec(line);
    if (m) out.push(...(m[1] ?? m[2]).split(',').map((x) => x.trim().split('.')[0]));
  }
  return out;
}

/** Lines too generic to mean shared logic (imports, bare keywords, the __main__ guard). */
function substantive(line: string): boolean {
  if (line.length < 24) return false;
  if (/^(import |from \S+ import )/.test(line)) return false;
  if (/^if __name__ == ["']__main__["']:$/.test(line)) return false;
  if (/^(set -euo pipefail|#!\/bin\/bash|#!\/usr\/bin\/env python3)$/.test(line)) return false;
  return true;
}

export function normaliseLine(line: string): string {
  return line.replace(/#.*$/, '').replace(/\s+/g, ' ').trim();
}

// Lines and bodies are compared by their normalised text itself (a Map key), not by a hash of it:
// the same matches without a sha256 per line (the gate runs on every generated task).
function substantiveLines(text: string): Set<string> {
  const out = new Set<string>();
  for (const raw of text.split('\n')) {
    const line = normaliseLine(raw);
    // A JSON literal line is data (paths, expected values), not code.
    if (/^\w+ = json\.loads\(r'''/.test(line)) continue;
    if (substantive(line)) out.add(line);
  }
  return out;
}

/** Bodies of Python `def`s (indentation-delimited), normalised, with their names; the name is not part of the key. */
function functionBodies(text: string): Map<string, string> {
  const out = new Map<string, string>();
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const m = /^(\s*)def (\w+)\(/.exec(lines[i]);
    if (!m) continue;
    const indent = m[1].length;
    const body: string[] = [];
    for (let j = i + 1; j < lines.length; j++) {
      if (lines[j].trim() === '') continue;
      if (lines[j].length - lines[j].trimStart().length <= indent) break;
      const n = normaliseLine(lines[j]);
      if (n) body.push(n);
    }
    if (body.length >= 2) out.set(body.join('\n'), m[2]);
  }
  return out;
}

export function checkNoSharedCode(components: Component[]): ShareFinding[] {
  const findings: ShareFinding[] = [];
  for (const c of components) {
    for (const mod of importedModules(c.text)) {
      if (!ALLOWED_IMPORTS.has(mod)) findings.push({ between: [c.name, c.name], kind: 'import', detail: `${c.name} imports ${mod}, which is not a standard-library module these programs may use` });
    }
  }
  // Each component's lines and bodies once, not once per pair.
  const lines = components.map((c) => substantiveLines(c.text));
  const bodies = components.map((c) => functionBodies(c.text));
  for (let i = 0; i < components.length; i++) {
    for (let j = 0; j < components.length; j++) {
      if (i === j) continue;
      const [x, y] = [components[i], components[j]];
      const stem = y.file.replace(/^.*\//, '').replace(/\.\w+$/, '');
      if (new RegExp(`\\b${stem.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\b`).test(x.text)) {
        findings.push({ between: [x.name, y.name], kind: 'reference', detail: `${x.name} names ${y.file}` });
      }
      if (j < i) continue;
      const ly = lines[j];
      for (const line of lines[i]) {
        if (ly.has(line)) findings.push({ between: [x.name, y.name], kind: 'line', detail: line });
      }
      const fy = bodies[j];
      for (const [body, name] of bodies[i]) {
        if (fy.has(body)) findings.push({ between: [x.name, y.name], kind: 'function', detail: `${x.name}:${name} = ${y.name}:${fy.get(body)}` });
      }
    }
  }
  return findings;
}
