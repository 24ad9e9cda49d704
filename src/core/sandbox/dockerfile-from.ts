/**
 * Finds the base images of a Dockerfile's `FROM` instructions, resolving `ARG`s declared before the
 * first FROM (with build args overriding their defaults) and skipping references to earlier stages.
 */
export interface FromLine {
  /** Index into the Dockerfile's lines. */
  line: number;
  /** The image token as written (may contain ${VAR}). */
  token: string;
  /** The token with ARGs substituted. */
  image: string;
  stageRef: boolean;
}

export function findFromLines(dockerfile: string, buildArgs: Record<string, string> = {}): FromLine[] {
  const lines = dockerfile.split('\n');
  const args: Record<string, string> = {};
  const stages = new Set<string>();
  const found: FromLine[] = [];
  let seenFrom = false;
  lines.forEach((raw, i) => {
    const text = raw.trim();
    const arg = /^ARG\s+([A-Za-z_][A-Za-z0-9_]*)(?:=(.*))?$/i.exec(text);
    if (arg && !seenFrom) {
      const def = (arg[2] ?? '').trim().replace(/^["']|["']$/g, '');
      args[arg[1]] = buildArgs[arg[1]] ?? def;
      return;
    }
    const m = /^FROM\s+(.*)$/i.exec(text);
    if (!m) return;
    seenFrom = true;
    const tokens = m[1].split(/\s+/).filter((t) => !t.startsWith('--'));
    const token = tokens[0];
    if (!token) return;
    const image = token.replace(/\$\{?([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}?/g, (_all, name: string, fallback?: string) => args[name] || buildArgs[name] || fallback || '');
    const stageRef = stages.has(image.toLowerCase()) || image === 'scratch';
    found.push({ line: i, token, image, stageRef });
    if (tokens[1]?.toLowerCase() === 'as' && tokens[2]) stages.add(tokens[2].toLowerCase());
  });
  return found;
}

/** Replaces the image token of the given FROM line, leaving flags and `AS name` as written. */
export function rewriteFrom(dockerfile: string, from: FromLine, image: string): string {
  const lines = dockerfile.split('\n');
  const idx = lines[from.line].indexOf(from.token);
  lines[from.line] = lines[from.line].slice(0, idx) + image + lines[from.line].slice(idx + from.token.length);
  return lines.join('\n');
}
