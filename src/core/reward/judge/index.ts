import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { TbrlError, errorMessage } from '../../errors';
import type { ChatMessage } from '../../model/types';
import type { TrajectoryLine } from '../../trajectory/schema';
import type { JudgeBackendConfig } from './backends';
import { computeJudgeScore, formatCorrection, parseJudgeAnswer, verdictComponents, type JudgeVerdict } from './rubric';
import { JudgeBackendSwitch, type BackendSwitchOptions } from './switch';
import { renderTranscript, type TranscriptLimits } from './transcript';

export { JudgeBackendSwitch } from './switch';
export type { JudgeBackendConfig } from './backends';
export { parseBackendConfig, backendLabel } from './backends';

export const JUDGE_PROMPT_VERSION = 'judge-v1';

export interface JudgeAttempt {
  ok: boolean;
  /** Why the attempt was not usable. */
  problem?: string;
  durationMs: number;
}

export type JudgeResult =
  | { ok: true; score: number; components: Record<string, number>; verdict: JudgeVerdict; promptVersion: string; backend: string; attempts: JudgeAttempt[] }
  | { ok: false; missing: string; promptVersion: string; backend: string | null; attempts: JudgeAttempt[] };

export interface JudgeOptions {
  /** A fixed backend, or a switch whose backend can change between calls. */
  backend: JudgeBackendConfig | JudgeBackendSwitch;
  promptVersion?: string;
  /** Extra calls with a format correction after a malformed answer (default 2). */
  maxFormatRetries?: number;
  /** Extra calls after a backend failure (after the model client's own retries; default 1). */
  maxBackendRetries?: number;
  transcriptLimits?: TranscriptLimits;
  /** Switch options when `backend` is a config (control file, logging). */
  switchOptions?: BackendSwitchOptions;
  log?: (line: string) => void;
}

/** Prompt files are read at run time: src/core/prompts from sources, dist/prompts in the bundles. */
export function loadJudgePrompt(version = JUDGE_PROMPT_VERSION): { version: string; text: string; sha256: string } {
  if (!/^judge-v[\w.-]+$/.test(version)) {
    throw new TbrlError('judge.prompt-missing', `Judge prompt version "${version}" is not a judge prompt name.`, `use a name like "${JUDGE_PROMPT_VERSION}" (src/core/prompts/${JUDGE_PROMPT_VERSION}.md)`);
  }
  const file = `${version}.md`;
  const candidates = [join(__dirname, '..', '..', 'prompts', file), join(__dirname, '..', 'prompts', file), join(__dirname, 'prompts', file)];
  const found = candidates.find((p) => existsSync(p));
  if (!found) {
    throw new TbrlError('judge.prompt-missing', `The judge prompt ${file} was not found (looked in ${candidates.join(', ')}).`, 'rebuild with `npm run build` (it copies src/core/prompts to dist/prompts), or pick an existing prompt version');
  }
  const text = readFileSync(found, 'utf8').trimEnd();
  return { version, text, sha256: createHash('sha256').update(text).digest('hex').slice(0, 12) };
}

export function parseTrajectoryLines(lines: TrajectoryLine[] | string[] | string): TrajectoryLine[] {
  const raw = typeof lines === 'string' ? lines.split('\n').filter((l) => l.trim()) : lines;
  return raw.map((l, i) => {
    if (typeof l !== 'string') return l;
    try {
      return JSON.parse(l) as TrajectoryLine;
    } catch (err) {
      throw new TbrlError('judge.bad-trajectory', `trajectory line ${i + 1} is not JSON: ${errorMessage(err)}`, 'pass the lines of trajectory.jsonl as written by `tbrl run`');
    }
  });
}

/**
 * The LLM judge. Never turns a failure into a score: a malformed answer is retried with a format
 * correction, and when every attempt fails the result says `missing` with the reason.
 */
export class Judge {
  readonly switch: JudgeBackendSwitch;
  private readonly prompt: { version: string; text: string; sha256: string };

  constructor(private readonly options: JudgeOptions) {
    this.switch = options.backend instanceof JudgeBackendSwitch
      ? options.backend
      : new JudgeBackendSwitch(options.backend, { log: options.log, ...options.switchOptions });
    this.prompt = loadJudgePrompt(options.promptVersion);
  }

  /** Recorded with every score: the prompt file name and a hash of its text (an edited file is a different prompt). */
  get promptVersion(): string {
    return `${this.prompt.version}#${this.prompt.sha256}`;
  }

  async score(trajectory: TrajectoryLine[] | string[] | string, signal?: AbortSignal): Promise<JudgeResult> {
    const attempts: JudgeAttempt[] = [];
    const promptVersion = this.promptVersion;
    // The backend is chosen once per judgement: a switch mid-way applies to the next trajectory.
    const backend = await this.switch.current();
    if (!backend) return { ok: false, missing: 'no judge backend is configured', promptVersion, backend: null, attempts };
    let transcript: string;
    try {
      transcript = renderTranscript(parseTrajectoryLines(trajectory), this.options.transcriptLimits);
    } catch (err) {
      return { ok: false, missing: `the trajectory could not be shown to the judge: ${errorMessage(err)}`, promptVersion, backend: backend.label, attempts };
    }
    const base: ChatMessage[] = [
      { role: 'system', content: this.prompt.text },
      { role: 'user', content: `${transcript}\n\n# Your evaluation\nRate how this agent worked, following the rubric. Answer with the JSON object.` },
    ];
    let messages = base;
    const formatBudget = this.options.maxFormatRetries ?? 2;
    const backendBudget = this.options.maxBackendRetries ?? 1;
    let formatFailures = 0;
    let backendFailures = 0;
    let lastProblem = '';
    while (formatFailures <= formatBudget && backendFailures <= backendBudget) {
      if (signal?.aborted) return { ok: false, missing: 'the judge call was cancelled', promptVersion, backend: backend.label, attempts };
      const started = Date.now();
      let text: string;
      try {
        text = await backend.complete(messages, signal);
      } catch (err) {
        backendFailures++;
        lastProblem = `backend error: ${errorMessage(err).split('\n')[0]}`;
        attempts.push({ ok: false, problem: lastProblem, durationMs: Date.now() - started });
        this.options.log?.(`judge ${backend.label}: ${lastProblem}`);
        continue;
      }
      const parsed = parseJudgeAnswer(text);
      if (parsed.ok) {
        attempts.push({ ok: true, durationMs: Date.now() - started });
        return {
          ok: true,
          score: computeJudgeScore(parsed.verdict),
          components: verdictComponents(parsed.verdict),
          verdict: parsed.verdict,
          promptVersion,
          backend: backend.label,
          attempts,
        };
      }
      formatFailures++;
      lastProblem = `malformed answer: ${parsed.problems.join('; ')}`;
      attempts.push({ ok: false, problem: lastProblem, durationMs: Date.now() - started });
      this.options.log?.(`judge ${backend.label}: ${lastProblem}${formatFailures <= formatBudget ? ' (asking again with a format correction)' : ''}`);
      messages = [...base, { role: 'assistant', content: text }, { role: 'user', content: formatCorrection(parsed.problems) }];
    }
    return { ok: false, missing: `no usable judge answer after ${attempts.length} attempt(s); last: ${lastProblem}`, promptVersion, backend: backend.label, attempts };
  }

  close(): void {
    if (!(this.options.backend instanceof JudgeBackendSwitch)) this.switch.close();
  }
}
