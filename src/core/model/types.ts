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
  /** Ask for token logprobs so each candidate records them and their sum (servers that lack them ignore it). */
  logprobs?: boolean;
  /**
   * Ask for token ids (`return_token_ids`, vLLM ≥ 0.10.2, SGLang, tbrl serve). Default on; a server
   * that refuses the field (HTTP 400 naming it) is asked again without it, once per client.
   */
  tokenIds?: boolean;
}

export interface Completion {
  text: string;
  completionTokens?: number;
  logprobSum?: number;
  finishReason?: string;
  /** Sampled token ids (vLLM's per-choice `token_ids`), when the server returns them. */
  tokenIds?: number[];
  /** Per-token logprobs of the sampled tokens. */
  logprobs?: number[];
}

export interface SampleResult {
  completions: Completion[];
  usage: { promptTokens: number; completionTokens: number };
  latencyMs: number;
  /** Indices of messages elided to fit the context budget. */
  elided: number[];
  /** Per-call usage and latency, in completion order. */
  calls?: ModelCallRecord[];
  /** The prompt as token ids (vLLM's `prompt_token_ids`), when the server returns them. */
  promptTokenIds?: number[];
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

