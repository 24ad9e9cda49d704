import type { Policy, PolicyContext, PolicyTurn } from './policy';

/** A policy that plays a fixed list of turns; after the last one it answers with an empty turn (which ends the episode). */
export class ScriptedPolicy implements Policy {
  readonly kind: 'scripted' | 'oracle';
  readonly description: string;

  constructor(
    private readonly turns: ReadonlyArray<string>,
    options: { kind?: 'scripted' | 'oracle'; description?: string } = {},
  ) {
    this.kind = options.kind ?? 'scripted';
    this.description = options.description ?? `scripted policy (${turns.length} turn${turns.length === 1 ? '' : 's'})`;
  }

  async next(context: PolicyContext): Promise<PolicyTurn> {
    const text = this.turns[context.step] ?? '';
    return { candidates: [{ text, parses: text.trim() !== '' }], chosen: 0, usage: { promptTokens: 0, completionTokens: 0 } };
  }
}
