import type { CommandTrace } from '../trace/types';
import { normalizePath, parseProcess, sameProcess } from './compute';
import type { ResourceSet } from './types';

/**
 * What the verifier's runtime reads on its own, whatever the agent did: the system's config and
 * libraries, the interpreter's caches, and anonymous files the tracer names by inode (`/tmp/#NNN`).
 */
const RUNTIME_FILES: RegExp[] = [
  /^\/(etc|usr|lib|lib32|lib64|libx32|bin|sbin|proc|sys|dev|run)(\/|$)/,
  /^\/tmp\/#\d+$/,
  /\/__pycache__\//,
  /\.py[co]$/,
  /^\/(root|home\/[^/]+)\/\.(cache|local\/lib)\//,
];

export function isRuntimeFile(path: string): boolean {
  return RUNTIME_FILES.some((r) => r.test(path));
}

export interface AgentVisibleResources {
  files: string[];
  ports: number[];
  processes: string[];
  /** In E, but no agent command wrote or started them: the verifier runtime's own reads, counted, not shown. */
  runtime: { files: string[]; processes: string[] };
}

/**
 * The part of E an agent command could have affected, for reports, the graph and the editor: a
 * file an agent command wrote, or one outside the runtime's own paths; a process an agent command
 * started; every port. E itself (in the trajectory and for DepGPO's credit) stays whole.
 */
export function agentVisibleResources(resources: ResourceSet, commands: ReadonlyArray<{ trace?: CommandTrace }>): AgentVisibleResources {
  const written = new Set<string>();
  const started: Array<ReturnType<typeof parseProcess>> = [];
  for (const c of commands) {
    const t = c.trace;
    for (const w of Array.isArray(t?.writes) ? t.writes : []) if (w && typeof w.path === 'string') written.add(normalizePath(w.path));
    for (const p of Array.isArray(t?.processes) ? t.processes : []) if (typeof p === 'string' && p) started.push(parseProcess(p));
  }
  const out: AgentVisibleResources = { files: [], ports: [...resources.ports], processes: [], runtime: { files: [], processes: [] } };
  for (const f of resources.files) (written.has(f) || !isRuntimeFile(f) ? out.files : out.runtime.files).push(f);
  for (const p of resources.processes) {
    const ref = parseProcess(p);
    (started.some((s) => sameProcess(s, ref)) ? out.processes : out.runtime.processes).push(p);
  }
  return out;
}

/** "+7 runtime files", "+4 runtime files, +1 runtime process", or undefined when nothing was left out. */
export function runtimeCount(runtime: AgentVisibleResources['runtime']): string | undefined {
  const parts: string[] = [];
  if (runtime.files.length) parts.push(`+${runtime.files.length} runtime file${runtime.files.length === 1 ? '' : 's'}`);
  if (runtime.processes.length) parts.push(`+${runtime.processes.length} runtime process${runtime.processes.length === 1 ? '' : 'es'}`);
  return parts.length ? parts.join(', ') : undefined;
}
