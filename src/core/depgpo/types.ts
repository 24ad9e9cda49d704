import type { CommandTrace, VerifierTrace } from '../trace/types';

/** One node of the dependency graph: a command the agent ran (a bash action or a file action). */
export interface DepgpoCommand {
  /** Index of the step (model turn) the command belongs to. */
  step: number;
  /** Position of the action inside its step, for pointing back into the trajectory. */
  action?: number;
  /** What the agent wrote: the bash command, or the file action's body. Stdout edges match against it. */
  text: string;
  /** Missing when the command ran untraced; it then neither reads nor writes anything in the graph. */
  trace?: CommandTrace;
}

export interface DepgpoInput {
  /** Commands in execution order. */
  commands: DepgpoCommand[];
  /** Values the task already states (a path in the instruction) are not evidence that a command fed another. */
  instruction: string;
  /** Trace of the verifier run; missing means no resource set, so DepGPO falls back to f_t = 1. */
  verifier?: VerifierTrace;
  /** Tokens the policy generated per step (token weights for Z); its length fixes the number of steps. */
  stepTokens: number[];
  /** From the trajectory header: tracing unavailable forces the fallback. */
  tracing?: { available: boolean; reason?: string };
  /** β of the read score; the paper uses 0.5. */
  beta?: number;
}

export type EdgeKind = 'file' | 'stdout';

export interface DepgpoEdge {
  /** Command indices (positions in `DepgpoInput.commands`); from < to always. */
  from: number;
  to: number;
  kind: EdgeKind;
  /** Files (file edges) or values (stdout edges) that carry the dependency; at most MAX_LABELS kept. Shared between edges: read-only. */
  labels: readonly string[];
  /** How many labels there were before truncation. */
  labelCount: number;
}

export interface CommandScore {
  /** q(c) over written lines, or undefined when the command wrote nothing. */
  write?: number;
  /** Σ β^d Contrib over writers reachable through stdout edges, or undefined without stdout out-edges. */
  read?: number;
  /** 1/0 for commands that bound/connected ports or left processes behind, else undefined. */
  portProcess?: number;
  /**
   * 1/0 for commands that changed a file's metadata or existence (chmod, chown, touch, rename,
   * unlink): 1 when the verifier read or checked that file and no later command changed it again.
   */
  metadata?: number;
  /** max of the parts that apply (0 when none does). */
  score: number;
  /** |W_c| and |W_c ∩ reach(E)|. */
  linesWritten: number;
  linesReachingE: number;
}

export interface ResourceSet {
  files: string[];
  ports: number[];
  processes: string[];
  /** Files the verifier checked for existence or permissions without reading them (only when there are any). */
  checked?: string[];
}

export interface DepgpoResult {
  resources: ResourceSet;
  edges: DepgpoEdge[];
  commandScores: CommandScore[];
  /** s_t per step. */
  stepScores: number[];
  /** f_t per step (all 1 on fallback). */
  factors: number[];
  /** Token-weighted mean of f (1 on fallback). */
  z: number;
  fallback?: string;
  /** False when the fallback is for lack of a usable trace (not because all scores came out equal). */
  traced: boolean;
  /** Inconsistencies in the traces that were repaired conservatively (never fatal). */
  warnings: string[];
  /** Per command: E files in which lines it wrote are still present at verification (direct sink edges). */
  sinkFiles: string[][];
  /** Per command: E ports / processes it touched (sink edges). Arrays may be shared: read-only. */
  sinkPorts: ReadonlyArray<readonly number[]>;
  sinkProcesses: ReadonlyArray<readonly string[]>;
}
