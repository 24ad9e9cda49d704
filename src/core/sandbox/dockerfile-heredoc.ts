import type { ContextFile } from './build-context';

/**
 * Dockerfile heredocs (`RUN <<EOF`, `COPY <<EOF /path`, Dockerfile syntax 1.4) rewritten into
 * instructions every builder understands. Engines before Docker 23 ship a built-in frontend without
 * heredocs and would fetch `docker/dockerfile:1.4` from Docker Hub for them, which an offline
 * machine cannot; the rewrite does what that frontend does:
 *
 * - `RUN <<EOF` alone runs the body with the build shell (`sh -c "<body>"`), or as a script file
 *   when the body starts with `#!`;
 * - a heredoc inside a command (`RUN python3 <<EOF`, `RUN cat <<EOF > f`) goes to the shell whole,
 *   which reads heredocs itself;
 * - `COPY`/`ADD <<NAME dest` copies a context file `.tbrl-heredoc/<n>/NAME` holding the body.
 *
 * Not rewritten: variable expansion inside an unquoted COPY heredoc (the body is copied verbatim).
 */
export interface HeredocRewrite {
  dockerfile: string;
  /** Context files the rewritten COPY/ADD instructions read. */
  files: ContextFile[];
  /** A `# syntax=` directive that was dropped (its frontend image would be pulled from a registry). */
  droppedSyntax?: string;
  rewritten: number;
}

export const HEREDOC_DIR = '.tbrl-heredoc';
const MARKER = /<<(?!<)(-?)(["']?)([A-Za-z_][A-Za-z0-9_.-]*)\2/g;
const DEFAULT_SHELL = ['/bin/sh', '-c'];

export function rewriteHeredocs(dockerfile: string): HeredocRewrite {
  const lines = dockerfile.split('\n');
  const out: string[] = [];
  const files: ContextFile[] = [];
  let droppedSyntax: string | undefined;
  let shell = DEFAULT_SHELL;
  let rewritten = 0;
  // Every original line keeps its place (bodies become blank lines), so the builder's line numbers are the author's.

  let i = 0;
  // Parser directives come first; the syntax one names a frontend image to pull.
  while (i < lines.length && /^\s*#\s*[a-z]+\s*=/i.test(lines[i])) {
    if (/^\s*#\s*syntax\s*=/i.test(lines[i])) {
      droppedSyntax = lines[i].replace(/^\s*#\s*syntax\s*=\s*/i, '').trim();
      out.push('');
    } else out.push(lines[i]);
    i++;
  }

  while (i < lines.length) {
    const start = i;
    // One instruction: its physical lines joined at trailing backslashes.
    let text = lines[i];
    while (/\\\s*$/.test(text) && !/^\s*#/.test(text) && i + 1 < lines.length) text = `${text.replace(/\\\s*$/, '')}${lines[++i]}`;
    i++;
    const instr = /^\s*(RUN|COPY|ADD|SHELL)\s+(.*)$/is.exec(text);
    if (instr && instr[1].toUpperCase() === 'SHELL') {
      try {
        const parsed: unknown = JSON.parse(instr[2].trim());
        if (Array.isArray(parsed) && parsed.every((p) => typeof p === 'string')) shell = parsed as string[];
      } catch {
        // A malformed SHELL is the builder's to report.
      }
    }
    const markers = instr && instr[1].toUpperCase() !== 'SHELL' ? [...instr[2].matchAll(MARKER)] : [];
    if (!instr || markers.length === 0) {
      for (let k = start; k < i; k++) out.push(lines[k]);
      continue;
    }
    // The bodies follow the instruction line, one per marker, each closed by its delimiter alone on a line.
    const bodies: string[] = [];
    let j = i;
    let complete = true;
    for (const m of markers) {
      const stripTabs = m[1] === '-';
      const body: string[] = [];
      const unindent = (line: string) => (stripTabs ? line.replace(/^\t+/, '') : line);
      while (j < lines.length && unindent(lines[j]).trimEnd() !== m[3]) body.push(unindent(lines[j++]));
      if (j >= lines.length) {
        complete = false;
        break;
      }
      j++;
      bodies.push(body.length ? `${body.join('\n')}\n` : '');
    }
    if (!complete) {
      // Not a heredoc after all (no closing delimiter): leave it for the builder to judge.
      for (let k = start; k < i; k++) out.push(lines[k]);
      continue;
    }
    const keyword = instr[1].toUpperCase();
    const { flags, rest } = splitFlags(instr[2]);
    let replacement: string;
    if (keyword === 'RUN') {
      const alone = markers.length === 1 && rest.trim() === markers[0][0];
      let script: string;
      if (alone && bodies[0].startsWith('#!')) {
        const path = `/tmp/.tbrl-heredoc-${rewritten}`;
        script = `cat > ${path} <<'TBRL_HEREDOC_EOF'\n${bodies[0]}TBRL_HEREDOC_EOF\nchmod +x ${path} && ${path}; s=$?; rm -f ${path}; exit $s`;
      } else if (alone) {
        script = bodies[0];
      } else {
        script = `${rest}\n${markers.map((m, k) => `${bodies[k]}${m[3]}`).join('\n')}`;
      }
      replacement = `RUN ${flags}${JSON.stringify([...shell, script])}`;
    } else {
      let args = rest;
      markers.forEach((m, k) => {
        const path = `${HEREDOC_DIR}/${rewritten}-${k}/${m[3]}`;
        files.push({ path, mode: 0o644, kind: 'file', content: Buffer.from(bodies[k]) });
        args = args.replace(m[0], path);
      });
      replacement = `${keyword} ${flags}${args}`;
    }
    rewritten++;
    out.push(replacement);
    // Keep the line count where it was, so later line numbers still point at the author's file.
    for (let k = start + 1; k < j; k++) out.push('');
    i = j;
  }
  if (files.length) {
    const dirs = new Set(files.map((f) => f.path.split('/').slice(0, 2).join('/')));
    files.unshift({ path: HEREDOC_DIR, mode: 0o755, kind: 'directory' }, ...[...dirs].map((d) => ({ path: d, mode: 0o755, kind: 'directory' as const })));
  }
  return { dockerfile: out.join('\n'), files, rewritten, ...(droppedSyntax ? { droppedSyntax } : {}) };
}

/** `--mount=type=cache,target=/x --network=none rest` → flags (with a trailing space) and the rest. */
function splitFlags(args: string): { flags: string; rest: string } {
  const m = /^((?:--[A-Za-z-]+(?:=(?:"[^"]*"|\S)*)?\s+)*)(.*)$/s.exec(args.trimStart());
  return { flags: m?.[1] ?? '', rest: m?.[2] ?? args };
}
