import type { CommandTrace, VerifierTrace } from '../trace/types';
import type { TrialOutcome } from '../run/outcome';
import type { VerifierMode } from '../verifier/modes';

/**
 * trajectory.jsonl: a header line, one line per step (appended and flushed as each step ends,
 * so a killed run keeps every completed step), a footer line with rewards and credit.
 * Readers accept any minor version of a known major and reject other majors with a clear error.
 * 1.1 added token-level records (candidate token ids, logprobs, finish reason; the turn's prompt
 * token ids as a delta) and the per-step cost; 1.0 files read as before, without them.
 */
export const TRAJECTORY_SCHEMA = 'tbrl.trajectory/1.1';
export const TRAJECTORY_MAJOR = 1;

export interface TrajectoryHeader {
  type: 'header';
  schema: string;
  runId: string;
  startedAt: string;
  task: { id: string; dir: string; format: string; instruction: string };
  policy: {
    kind: 'model' | 'oracle' | 'scripted' | 'human'; model?: string; baseUrl?: string; n?: number;
    /** The run served the local default model itself (`tbrl serve` on this GGUF); baseUrl was its loopback port. */
    local?: { modelPath: string };
  };
  verifier?: { mode: string; n: number; model?: string };
  config: Record<string, unknown>;
  versions: { tbrl: string; node: string; promptVersion?: string };
  sandbox?: {
    image: string;
    substitutedFrom?: string;
    workspaceMode?: 'copy' | 'bind';
    tracing: { available: boolean; method?: string; reason?: string };
    /** How the agent's commands were kept from the frame shell (SandboxInfo.cage). */
    cage?: { by: 'helper' | 'nondumpable' | 'setpriv' | 'none'; capability?: string; note?: string; frameShell?: string };
    /**
     * The image the root run's container was created from (`id` when the daemon said), where the
     * originals of changed files are read from. A fork's `image` is a checkpoint, so it carries its
     * source's value. Missing in runs written before originals were kept.
     */
    originalImage?: { name: string; id?: string };
  };
  /** Set when this run was forked from another run's checkpoint. */
  forkedFrom?: { runId: string; step: number; trajectory?: string };
  /** The system prompt the policy saw (so exports and replays can rebuild the exact conversation). */
  systemPrompt?: string;
  /** Run limits in force (a run that ended at a limit says which). */
  limits?: { maxSteps?: number; maxTimeSec?: number; maxTokens?: number };
}

export interface CandidateRecord {
  text: string;
  completionTokens?: number;
  logprobSum?: number;
  /** Sampled token ids, when the server returns them (vLLM/SGLang/tbrl serve with return_token_ids). */
  tokenIds?: number[];
  /** ln p of each sampled token, aligned with tokenIds (or with the server's logprobs tokens). */
  logprobs?: number[];
  /** `stop` (end of turn or a stop string), `length` (max_tokens), ... as the server said. */
  finishReason?: string;
  /** False when the candidate did not parse; such candidates are ranked last by the verifier. */
  parses: boolean;
}

export interface VerifierDecisionRecord {
  /** A registered mode (verifier/modes/), or `none` when no verifier call was made. */
  mode: VerifierMode | 'none';
  chosen: number;
  scores: number[];
  margin?: number;
  /** Pairwise mode: wins[i][j] = margin-weighted preference of i over j. */
  matrix?: number[][];
  calls: number;
  /** Verifier answers that did not parse and were asked for again once (counted in calls). */
  retries?: number;
  outputTokens: number;
  /** Output tokens along the longest chain of dependent calls (what wall time scales with). */
  parallelOutputTokens: number;
  fallback?: string;
  degradedFrom?: string;
}

export interface ActionRecord {
  /** `bash`, `file.write`, `file.edit`, `search.grep`, `todo`, `scratchpad`, `finish`, ... */
  kind: string;
  /** The parsed YAML body. */
  input: Record<string, unknown>;
  /** What the agent was shown (wrapped, bounded). */
  observation: string;
  ok: boolean;
  exitCode?: number | null;
  timedOut?: boolean;
  durationMs: number;
  trace?: CommandTrace;
}

export interface TodoItem { id: number; content: string; done: boolean }

export interface StepRecord {
  type: 'step';
  index: number;
  startedAt: string;
  durationMs: number;
  candidates: CandidateRecord[];
  decision?: VerifierDecisionRecord;
  /** The turn that was executed (after a human override or edit, the edited text). */
  chosenText: string;
  actions: ActionRecord[];
  parseErrors: string[];
  usage: { promptTokens: number; completionTokens: number; latencyMs?: number };
  todos: TodoItem[];
  scratchpad: string[];
  /** Checkpoint image of the container after this step (for fork/step back). */
  checkpoint?: string;
  /**
   * Shell state a container commit does not carry, needed to fork from `checkpoint`: the cwd and
   * the exported environment minus secret-looking variables (names like *_TOKEN / *_API_KEY, or
   * values shaped like provider keys), which are never written to a trajectory. A fork therefore
   * starts without them; variables baked into the image or the container's own env are unaffected.
   */
  checkpointState?: { cwd: string; env: Record<string, string>; droppedEnv?: string[] };
  /** Why the checkpoint of this step could not be taken (the step itself still counts). */
  checkpointError?: string;
  /** Progress potential Φ after this step (Tev tasks). */
  phi?: number;
  human?: { action: 'accept' | 'pick' | 'edit'; chosen: number; editedFrom?: string };
  /** Messages elided from the context before this step's model call. */
  elided?: number[];
  /**
   * The token ids of this turn's prompt (chat template applied by the server), stored as a delta:
   * the first `keep` ids of the previous step's prompt followed by `append`. With elision the kept
   * prefix shrinks, so the ids are always exactly what the model read; `sha256` (of the ids as
   * comma-separated decimals) checks a rebuild (`promptTokenIds` in trajectory/tokens.ts).
   */
  prompt?: PromptTokensRecord;
  /** USD of this step's model calls (generator and verifier) by the price table; 0 for local models. */
  costUsd?: number;
}

export interface PromptTokensRecord {
  /** Length of the whole prompt. */
  tokens: number;
  keep: number;
  append: number[];
  sha256: string;
}

export interface TestOutcome {
  name: string;
  status: 'passed' | 'failed' | 'error' | 'skipped' | 'xfail' | 'xpass' | 'not-run';
  weight: number;
}

export interface RewardRecord {
  /** Weighted test score in [0,1]; undefined when the test run itself failed (see testError). */
  tests?: number;
  testOutcomes?: TestOutcome[];
  testError?: { kind: string; message: string; logTail: string };
  /** Harbor reward.json metrics, and which of them (or which rule over them) became `tests`. */
  metrics?: Record<string, number>;
  metricsRule?: string;
  judge?: { score: number; components: Record<string, number>; promptVersion: string; backend: string } | { missing: string };
  /** Tev tasks: R = 1[pass] + λΦ(s_T). */
  pprs?: { pass: boolean; phi: number; lambda: number };
  weights: { tests: number; judge: number };
  total: number;
  /** Reward tampering seen in the trace or found before verification (src/core/reward/tampering.ts). */
  tampering?: TamperFlag[];
}

/** Something the agent did to what scores it: written tests or hooks, a rewritten runner, a read solution, a planted reward. */
export interface TamperFlag {
  kind: 'test-files' | 'test-hook' | 'test-runner' | 'solution-read' | 'reward-file';
  path: string;
  /** The step whose command did it; absent for what was found before verification. */
  step?: number;
  detail: string;
}

export interface DepgpoRecord {
  /** Resource set E. */
  resources: { files: string[]; ports: number[]; processes: string[] };
  /** Per step: score s_t and factor f_t. */
  stepScores: number[];
  factors: number[];
  edges: Array<{ from: number; to: number; kind: 'file' | 'stdout'; label: string }>;
  fallback?: string;
  /** Per-step advantages Â_t, when a group-relative advantage Â_i was known (training rollouts). */
  advantages?: number[];
}

export interface TrajectoryFooter {
  type: 'footer';
  endedAt: string;
  endReason: 'finished' | 'max-steps' | 'max-time' | 'max-tokens' | 'no-action' | 'repeated-errors' | 'error' | 'interrupted' | 'cancelled';
  endMessage?: string;
  steps: number;
  reward?: RewardRecord;
  verifierTrace?: VerifierTrace;
  depgpo?: DepgpoRecord;
  usage: { promptTokens: number; completionTokens: number; verifierCalls: number; verifierOutputTokens: number };
  /** The trial's outcome class and its root cause (src/core/run/outcome.ts); read it through `outcomeOf`. */
  outcome?: TrialOutcome;
}

export type TrajectoryLine = TrajectoryHeader | StepRecord | TrajectoryFooter;
