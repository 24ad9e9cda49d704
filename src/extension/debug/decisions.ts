import type { HumanDecision, PendingTurnInfo, TurnChoice } from '../../core/debug/turn';

/**
 * Human-in-the-loop decisions on a live run's waiting turn, shared by the `TBRL: Decide Turn`
 * quick pick and the step inspector's buttons (pure: no vscode, so both front ends and a unit
 * test see the same choices, requests and messages). The data types are in core/debug/turn.ts,
 * where the step inspector webview imports them from.
 */

/** The body of `tbrl/decide` for a choice; every choice but stop pauses again before the next turn, as stepping does. */
export function decideRequest(choice: TurnChoice, text?: string): HumanDecision {
  if (choice.action === 'stop') return { action: 'stop' };
  if (choice.action === 'edit') return { action: 'edit', text: text ?? choice.text, stopAfter: true };
  if (choice.action === 'pick') return { action: 'pick', candidate: choice.candidate, stopAfter: true };
  return { action: 'accept', stopAfter: true };
}

/** Picking the policy's own pick is accepting it: the label then says the human agreed with the verifier. */
export function normalizeChoice(choice: TurnChoice, turn: PendingTurnInfo): TurnChoice {
  return choice.action === 'pick' && choice.candidate === turn.chosen ? { action: 'accept' } : choice;
}

export interface ChoiceItem {
  label: string;
  description?: string;
  detail?: string;
  choice: TurnChoice;
}

/** The quick pick's entries: accept, every other candidate with its score, edit, stop. */
export function choiceItems(turn: PendingTurnInfo): ChoiceItem[] {
  const d = turn.decision;
  const score = (i: number): string | undefined => (d?.scores[i] === undefined ? undefined : `score ${d.scores[i].toFixed(3)}`);
  const firstLines = (text: string): string => text.split('\n').filter((l) => l.trim()).slice(0, 3).join(' ⏎ ');
  const pickName = d ? 'the verifier\'s pick' : 'the proposed turn';
  return [
    { label: `$(check) Accept ${pickName} (candidate ${turn.chosen})`, description: score(turn.chosen), detail: firstLines(turn.text), choice: { action: 'accept' } },
    ...turn.candidates.flatMap((c, i): ChoiceItem[] => (i === turn.chosen ? [] : [{
      label: `$(list-selection) Run candidate ${i}`,
      description: [score(i), c.parses ? undefined : 'does not parse'].filter(Boolean).join(' · ') || undefined,
      detail: firstLines(c.text),
      choice: { action: 'pick', candidate: i },
    }])),
    { label: '$(edit) Edit the turn…', choice: { action: 'edit' } },
    { label: '$(debug-stop) Stop the run', choice: { action: 'stop' } },
  ];
}

/** What the user is told once the adapter took the decision. */
export function decidedMessage(turn: PendingTurnInfo, choice: TurnChoice, labels: number | undefined): string {
  const step = turn.step;
  const what = choice.action === 'accept' ? `running candidate ${turn.chosen}${turn.decision ? ' (the verifier\'s pick)' : ''}`
    : choice.action === 'pick' ? `running candidate ${choice.candidate} instead of ${turn.decision ? 'the verifier\'s pick' : 'candidate'} ${turn.chosen}`
    : choice.action === 'edit' ? 'running the edited turn' : 'stopping the run';
  if (choice.action === 'stop') return `Step ${step}: ${what}; nothing ran, no labels.`;
  const written = labels === undefined ? 'labels were not written (see the Debug Console)'
    : labels === 0 ? 'no preference label (no other candidate does something else)'
    : labels === 1 ? '1 preference label written to labels.jsonl' : `${labels} preference labels written to labels.jsonl`;
  return `Step ${step}: ${what}; ${written}.`;
}
