import type { ModelClientOptions } from '../../../model/client';
import type { ChatMessage } from '../../../model/types';

export interface JudgeBackend {
  /** Names the backend in logs and records (never includes a key). */
  readonly label: string;
  complete(messages: ChatMessage[], signal?: AbortSignal): Promise<string>;
}

/** Readers for the fields of an untrusted backend object; each fails with the field named. */
export interface ConfigFields {
  fail(what: string): never;
  optString(key: string): string | undefined;
  optNumber(key: string): number | undefined;
}

/**
 * A kind of judge backend: one file in this folder and one line in `index.ts`. `parse` turns
 * untrusted JSON (a control file, a setting) with this `kind` into its config.
 */
export interface JudgeBackendKind<Config extends { kind: string }> {
  readonly kind: Config['kind'];
  /** One JSON example, shown when a config is wrong. */
  readonly example: string;
  parse(value: Record<string, unknown>, fields: ConfigFields): Config;
  label(config: Config): string;
  create(config: Config, clientOptions?: ModelClientOptions): JudgeBackend;
}
