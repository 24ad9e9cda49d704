import type { Sandbox } from '../sandbox/types';
import type { ActionRecord, TodoItem } from '../trajectory/schema';

/** One action parsed from a turn: `<tag>` + YAML body. `kind` is `bash`, `file.edit`, `search.glob`, ... */
export interface ParsedAction {
  tag: 'bash' | 'todo' | 'file' | 'search' | 'scratchpad' | 'finish';
  kind: string;
  body: Record<string, unknown>;
  /** The text of the tag as it appeared in the turn. */
  raw: string;
}

export interface ActionParseError {
  /** The offending text, quoted back to the agent. */
  excerpt: string;
  /** What was wrong (YAML line/column, missing field, unknown action) and a correct example. */
  message: string;
  /** Stable machine-readable cause: `yaml-syntax`, `missing-field`, `wrong-type`, `unknown-tag`, ... */
  code?: string;
  /** The tag the error belongs to, when one was recognised. */
  tag?: string;
  /** The correct example included in `message`, on its own. */
  example?: string;
}

/** A turn in order: actions and errors interleaved as they appeared. */
export interface ParsedTurn {
  items: Array<{ ok: true; action: ParsedAction } | { ok: false; error: ActionParseError }>;
}

/** Mutable agent state that actions read and change (todo list, scratchpad). */
export interface AgentState {
  todos: TodoItem[];
  nextTodoId: number;
  scratchpad: string[];
}

export interface ActionContext {
  sandbox: Sandbox;
  state: AgentState;
  /** Trace bash commands and file writes for DepGPO. */
  trace: boolean;
  /** Upper bound on any single observation, in bytes. */
  maxObservationBytes: number;
  /** Default per-command timeout. */
  defaultTimeoutMs: number;
}

export interface ActionResult {
  record: ActionRecord;
  /** `finish`, or a bash action with end_after_cmd_success that succeeded: stop executing this turn and end the episode. */
  endsEpisode?: boolean;
}
