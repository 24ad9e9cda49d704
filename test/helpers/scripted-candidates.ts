import type { Responder } from './openai-server';

/**
 * A scripted model for human-in-the-loop tests, answered through the local OpenAI-compatible
 * server: the first agent turn offers three candidates (each writes its own marker), a pointwise
 * verifier scores them 9 / 5 / 2 so candidate 0 is the verifier's pick; the second turn is SECOND
 * and every later one FINISH, each as n identical candidates (so no verifier call). Launch it with
 * n = 3 and the pointwise verifier.
 */
export const CANDIDATES = ['zero', 'one', 'two'].map((name) => `<bash>\ncmd: echo cand-${name} | tee /tmp/choice.txt\n</bash>`);
export const SECOND = '<bash>\ncmd: echo second-turn\n</bash>';
export const FINISH = '<finish>\nmessage: done\n</finish>';
const SCORES: Record<string, number> = { 'cand-zero': 9, 'cand-one': 5, 'cand-two': 2 };

export interface ScriptedCandidates extends Responder {
  agentCalls(): number;
  verifierCalls(): number;
  /** Later agent turns wait until the returned release is called (to look at the UI between two stops). */
  holdLaterTurns(): () => void;
}

export function scriptedCandidates(): ScriptedCandidates {
  let agent = 0;
  let verifier = 0;
  let held: Promise<void> | undefined;
  const respond = async (req: Parameters<Responder>[0]): Promise<string | string[]> => {
    if (/^You are the verifier/.test(req.messages[0]?.content ?? '')) {
      verifier++;
      // Score the candidate under review only: the history shown above it holds turns that already ran.
      const candidate = (req.messages.at(-1)?.content ?? '').split('# Candidate next turn')[1] ?? '';
      return `Scored.\nSCORE: ${SCORES[/cand-(zero|one|two)/.exec(candidate)?.[0] ?? ''] ?? 0}`;
    }
    const call = ++agent;
    if (call === 1) return CANDIDATES;
    await held;
    return Array.from({ length: req.n }, () => (call === 2 ? SECOND : FINISH));
  };
  const holdLaterTurns = (): (() => void) => {
    let release!: () => void;
    held = new Promise((r) => (release = r));
    return release;
  };
  return Object.assign(respond, { agentCalls: () => agent, verifierCalls: () => verifier, holdLaterTurns });
}
