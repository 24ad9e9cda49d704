import { TbrlError, errorMessage } from '../errors';
import type { RewardRecord, TrajectoryFooter } from '../trajectory/schema';
import type { TrialOutcome } from './outcome';

export interface OutcomeInput {
  /** What ended the run early (a thrown error), if anything. */
  failure?: unknown;
  endReason: TrajectoryFooter['endReason'];
  endMessage?: string;
  reward?: RewardRecord;
  /** The run was scored on purpose without tests (editor exploration): nothing to classify against. */
  skipReward?: boolean;
  /** The image a stand-in replaced, named in environment and verifier causes (the likeliest reason). */
  substitutedFrom?: string;
}

/** Model-client error codes that mean the conversation no longer fits the model's window. */
const CONTEXT_CODES = new Set(['context-overflow']);
const CONTEXT_TEXT = /context (length|window)|maximum context|too many tokens|prompt is too long|context_length_exceeded/i;

/**
 * The outcome class of one finished run (src/core/run/outcome.ts). The agent owns passed, failed
 * and agent_timeout; everything that broke around it (the model endpoint, the verifier, the
 * container) is named as such so it is masked in credit and training instead of scored 0.
 */
export function classifyOutcome(input: OutcomeInput): TrialOutcome {
  const { failure, endReason } = input;
  if (failure !== undefined) return classifyFailure(failure, input);
  if (endReason === 'interrupted' || endReason === 'cancelled') {
    return { class: 'environment_error', cause: `the run was ${endReason} before it was scored${input.endMessage ? ` (${oneLine(input.endMessage)})` : ''}` };
  }
  const reward = input.reward;
  if (!reward) {
    if (input.skipReward) return { class: 'environment_error', cause: 'the run was not scored (scoring skipped)' };
    return { class: 'environment_error', cause: 'the run ended without a reward' };
  }
  if (reward.tests === undefined && reward.testError) return verifierError(reward.testError, input.substitutedFrom);
  const passed = reward.pprs ? reward.pprs.pass : reward.tests === 1;
  if (passed) return { class: 'passed' };
  if (endReason === 'max-time') return { class: 'agent_timeout', cause: oneLine(input.endMessage) ?? 'the agent ran out of time' };
  const failing = reward.testOutcomes?.filter((t) => t.status !== 'passed' && t.status !== 'skipped').map((t) => t.name) ?? [];
  const cause = failing.length ? `failing: ${failing.slice(0, 3).join(', ')}${failing.length > 3 ? ` and ${failing.length - 3} more` : ''}` : oneLine(input.endMessage);
  return { class: 'failed', ...(cause ? { cause } : {}) };
}

function classifyFailure(failure: unknown, input: OutcomeInput): TrialOutcome {
  const code = failure instanceof TbrlError ? failure.code : undefined;
  const message = oneLine(errorMessage(failure)) ?? 'unknown error';
  if ((code && CONTEXT_CODES.has(code)) || (code?.startsWith('model-') && CONTEXT_TEXT.test(errorMessage(failure)))) {
    return { class: 'context_overflow', cause: message };
  }
  if (code?.startsWith('model-') || code === 'policy-bad-turn') return { class: 'model_error', cause: message };
  const substituted = input.substitutedFrom ? ` (the image ${input.substitutedFrom} was replaced by a stand-in)` : '';
  return { class: 'environment_error', cause: `${code ? `[${code}] ` : ''}${message}${substituted}` };
}

/**
 * A verifier that crashed before reporting. When its log shows a network failure the cause names
 * the host, because the usual reason is a test script that fetches its tools (uv, pip) at start.
 */
export function verifierError(testError: NonNullable<RewardRecord['testError']>, substitutedFrom?: string): TrialOutcome {
  const host = unreachableHost(`${testError.logTail}\n${testError.message}`);
  if (host) return { class: 'verifier_error', cause: `the verifier could not reach ${host}: the task needs network or pre-provisioned tools` };
  const substituted = substitutedFrom ? ` (on a stand-in for ${substitutedFrom})` : '';
  const missing = missingThing(testError.logTail);
  if (missing) return { class: 'verifier_error', cause: `the verifier needs ${missing}, which is not in the container: the task needs it pre-provisioned${substituted}` };
  return { class: 'verifier_error', cause: `${testError.kind}: ${oneLine(testError.message) ?? ''}${substituted}`.trim() };
}

/** `uv: command not found`, `tests/setup.sh: No such file or directory`: what the test runner looked for and did not find. */
export function missingThing(log: string): string | undefined {
  const m = /(?:^|\n)(?:[^\n:]*: )?(?:line \d+: )?([^\s:]+): (command not found|No such file or directory)/.exec(log);
  return m ? `${m[1]} (${m[2]})` : undefined;
}

// A host is dotted (astral.sh, pypi.org): "Could not resolve hostname" must not yield "name".
const HOST = String.raw`([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+)`;
const HOST_PATTERNS: RegExp[] = [
  new RegExp(String.raw`Could not resolve host(?:name)?:?\s+'?` + HOST, 'i'),
  new RegExp(String.raw`Failed to (?:connect to|resolve) '?` + HOST, 'i'),
  new RegExp(String.raw`host='` + HOST, 'i'),
  new RegExp(String.raw`unable to resolve host address '?` + HOST, 'i'),
  new RegExp(String.raw`(?:getaddrinfo|dns error|lookup)\W[^\n]*?` + HOST, 'i'),
  new RegExp(String.raw`Connection to ` + HOST + String.raw` timed out`, 'i'),
  new RegExp(String.raw`(?:Name or service not known|Temporary failure in name resolution)[^\n]*?\(` + HOST, 'i'),
];
const NETWORK_DOWN = /Network is unreachable|Temporary failure in name resolution|Could not resolve host|Name or service not known|nodename nor servname|No address associated with hostname/i;

/** The host a log failed to reach, `a network host` when the log shows a network failure without one, else undefined. */
export function unreachableHost(log: string): string | undefined {
  for (const pattern of HOST_PATTERNS) {
    const m = pattern.exec(log);
    if (m?.[1]) return m[1].replace(/[.'"]+$/, '');
  }
  return NETWORK_DOWN.test(log) ? 'a network host' : undefined;
}

function oneLine(text: string | undefined): string | undefined {
  const line = text?.split('\n').find((l) => l.trim() !== '')?.trim();
  return line ? (line.length > 240 ? `${line.slice(0, 237)}...` : line) : undefined;
}
