import { ModelClient, type ModelClientOptions } from '../../../model/client';
import type { ChatMessage } from '../../../model/types';
import type { JudgeBackend, JudgeBackendKind } from './backend';

/** An OpenAI-compatible endpoint, called through `ModelClient`. */
export interface OpenAIJudgeConfig {
  kind: 'openai';
  baseUrl: string;
  model: string;
  /** Prefer apiKeyEnv: a key in a control file ends up in backups and shell history. */
  apiKey?: string;
  apiKeyEnv?: string;
  temperature?: number;
  maxTokens?: number;
  timeoutMs?: number;
}

class OpenAIJudgeBackend implements JudgeBackend {
  readonly label: string;
  private readonly client: ModelClient;

  constructor(config: OpenAIJudgeConfig, clientOptions?: ModelClientOptions) {
    this.label = openaiBackend.label(config);
    const apiKey = config.apiKey ?? (config.apiKeyEnv ? process.env[config.apiKeyEnv] : undefined);
    this.client = new ModelClient(
      { baseUrl: config.baseUrl, model: config.model, apiKey, temperature: config.temperature ?? 0.1, maxTokens: config.maxTokens ?? 1500, timeoutMs: config.timeoutMs },
      clientOptions,
    );
  }

  async complete(messages: ChatMessage[], signal?: AbortSignal): Promise<string> {
    const result = await this.client.sample(messages, 1, { signal });
    return result.completions[0]?.text ?? '';
  }
}

export const openaiBackend: JudgeBackendKind<OpenAIJudgeConfig> = {
  kind: 'openai',
  example: '{"kind": "openai", "baseUrl": "http://localhost:8000/v1", "model": "qwen3-32b", "apiKeyEnv": "JUDGE_API_KEY"}',
  parse(_v, { fail, optString, optNumber }) {
    const baseUrl = optString('baseUrl');
    const model = optString('model');
    if (!baseUrl || !/^https?:\/\//.test(baseUrl)) fail('"baseUrl" must be an http(s) URL such as http://localhost:8000/v1');
    if (!model) fail('"model" is required for an openai backend');
    return {
      kind: 'openai', baseUrl: baseUrl!, model: model!, apiKey: optString('apiKey'), apiKeyEnv: optString('apiKeyEnv'),
      temperature: optNumber('temperature'), maxTokens: optNumber('maxTokens'), timeoutMs: optNumber('timeoutMs'),
    };
  },
  label: (c) => `openai:${c.model}@${c.baseUrl}`,
  create: (c, clientOptions) => new OpenAIJudgeBackend(c, clientOptions),
};
