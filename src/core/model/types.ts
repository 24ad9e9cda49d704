export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface ModelConfig {
  baseUrl: string;
  model: string;
  /** Never written to trajectories, logs or bundles. */
  apiKey?: string;
  temperature?: number;
  topP?: number;
  maxTokens?: number;
  stop?: string[];
  /** Context window in tokens, for eliding old observations. */
  contextTokens?: number;
  timeoutMs?: number;
  maxRetries?: number;
  /** Parallel requests when the server ignores `n`. */
  concurrency?: number;
  /** Ask for token logprobs so each candidate records its logprob sum (servers that lack them ignore it). */
  logprobs?: boolean;
}

export interface Completion {
  text: string;
  completionTokens?: number;
  logprobSum?: number;
  finishReason?: string;
}

export interface SampleResult {
  completions: Completion[];
  usage: { promptTokens: number; completionTokens: number };
  latencyMs: number;
  /** Indices of messages elided to fit the context budget. */
  elided: number[];
  /** Per-call usage and latency, in completion order. */
  calls?: ModelCallRecord[];
}

/** One HTTP call made while sampling (a sample may top up with several). */
export interface ModelCallRecord {
  /** Choices requested and received in this call. */
  requested: number;
  received: number;
  promptTokens: number;
  completionTokens: number;
  latencyMs: number;
  /** Attempts including retries (1 = first try succeeded). */
  attempts: number;
}

