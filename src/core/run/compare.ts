import type { StepRecord, TrajectoryFooter, TrajectoryHeader } from '../trajectory/schema';
import { PARSE_ERROR } from '../trajectory/replay';
import { formatUsd } from '../model/pricing';

export interface ComparedRun {
  label: string;
  policyDescription: string;
  header: TrajectoryHeader;
  steps: StepRecord[];
  footer: TrajectoryFooter;
  trajectoryPath: string;
  reportPath: string;
}

/**
 * Runs of the same task side by side (the main job: the local model against the oracle). Every
 * row is read from the trajectories, so a failing model shows exactly how it failed.
 */
export function renderComparison(runs: ComparedRun[]): string {
  const cell = (f: (r: ComparedRun) => string) => `| ${runs.map(f).join(' | ')} |`;
  const row = (name: string, f: (r: ComparedRun) => string) => `| ${name} ${cell(f)}`;
  const seconds = (r: ComparedRun) => ((Date.parse(r.footer.endedAt) - Date.parse(r.header.startedAt)) / 1000).toFixed(1);
  const executed = (r: ComparedRun) => r.steps.reduce((a, s) => a + s.actions.filter((x) => x.kind !== PARSE_ERROR).length, 0);
  const parseErrors = (r: ComparedRun) => r.steps.reduce((a, s) => a + s.parseErrors.length, 0);
  const candidates = (r: ComparedRun) => r.steps.reduce((a, s) => a + s.candidates.length, 0);
  const parsing = (r: ComparedRun) => r.steps.reduce((a, s) => a + s.candidates.filter((c) => c.parses).length, 0);
  const decisions = (r: ComparedRun) => {
    const d = r.steps.filter((s) => s.decision);
    if (!d.length) return 'none';
    const fallbacks = d.filter((s) => s.decision!.fallback || s.decision!.degradedFrom).length;
    return `${d.length} (${[...new Set(d.map((s) => s.decision!.mode))].join(', ')}; picks ${d.map((s) => s.decision!.chosen).join(' ')}${fallbacks ? `; ${fallbacks} fallback(s)` : ''})`;
  };
  const tokenIds = (r: ComparedRun) => {
    const c = r.steps.flatMap((s) => s.candidates);
    const withIds = c.filter((x) => x.tokenIds).length;
    return c.length ? `${withIds}/${c.length} candidates; ${r.steps.filter((s) => s.prompt).length}/${r.steps.length} prompts` : 'n/a';
  };
  const reward = (r: ComparedRun) => r.footer.reward ? `**${r.footer.reward.total.toFixed(3)}**${r.footer.reward.tests !== undefined ? ` (tests ${r.footer.reward.tests.toFixed(3)})` : ''}` : 'not computed';
  const factors = (r: ComparedRun) => r.footer.depgpo ? `${r.footer.depgpo.factors.map((x) => x.toFixed(2)).join(' ')}${r.footer.depgpo.fallback ? ` (fallback: ${oneLine(r.footer.depgpo.fallback)})` : ''}` : 'not computed';
  const cost = (r: ComparedRun) => {
    const known = r.steps.filter((s) => s.costUsd !== undefined);
    return known.length ? formatUsd(known.reduce((a, s) => a + s.costUsd!, 0)) : 'unknown (no price for this model)';
  };
  const lines = [
    `# ${runs[0]?.header.task.id ?? 'Task'}: ${runs.map((r) => r.label).join(' vs ')}`,
    '',
    `| | ${runs.map((r) => r.label).join(' | ')} |`,
    `|---|${runs.map(() => '---').join('|')}|`,
    row('Policy', (r) => oneLine(r.policyDescription)),
    row('Reward', reward),
    row('Steps', (r) => `${r.steps.length} (ended: ${r.footer.endReason})`),
    row('Actions executed', (r) => String(executed(r))),
    row('Parse errors', (r) => String(parseErrors(r))),
    row('Candidates that parse', (r) => `${parsing(r)}/${candidates(r)}`),
    row('Verifier decisions', decisions),
    row('DepGPO factors f_t', factors),
    row('Tokens', (r) => `${r.footer.usage.promptTokens} prompt + ${r.footer.usage.completionTokens} completion`),
    row('Token ids recorded', tokenIds),
    row('Cost', cost),
    row('Time', (r) => `${seconds(r)} s`),
    row('Report', (r) => r.reportPath),
    '',
  ];
  for (const r of runs) {
    lines.push(`## ${r.label}: turn by turn`, '');
    if (!r.steps.length) lines.push(`No steps (${r.footer.endReason}${r.footer.endMessage ? `: ${oneLine(r.footer.endMessage)}` : ''}).`, '');
    for (const s of r.steps) {
      const ran = s.actions.filter((a) => a.kind !== PARSE_ERROR).map((a) => `${a.kind}${a.kind === 'bash' ? ` → exit ${a.exitCode ?? '-'}` : ''}`);
      const d = s.decision ? `; verifier ${s.decision.mode} chose ${s.decision.chosen}${s.decision.fallback ? ` (fallback: ${oneLine(s.decision.fallback)})` : ''}` : '';
      lines.push(`- step ${s.index}: ${ran.join(', ') || 'nothing executed'}${s.parseErrors.length ? `; parse error: ${oneLine(s.parseErrors[0]).slice(0, 160)}` : ''}${d}`);
      if (r.header.policy.kind === 'model') lines.push(`  - executed text: \`${oneLine(s.chosenText).slice(0, 200).replace(/`/g, "'")}\``);
    }
    lines.push('');
  }
  return lines.join('\n');
}

function oneLine(s: string): string {
  return s.replace(/\s*\n\s*/g, ' ').replace(/\|/g, '\\|');
}
