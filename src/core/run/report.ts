import type { StepRecord, TrajectoryFooter, TrajectoryHeader } from '../trajectory/schema';
import { PARSE_ERROR } from '../trajectory/replay';
import { isMasked, outcomeOf } from './outcome';
import { trajectoryCommands } from '../depgpo/trajectory';
import { agentVisibleResources, runtimeCount } from '../depgpo/visible';
import { describeTamperFlags } from '../reward/tampering';
import { formatUsd } from '../model/pricing';

/** A short human-readable report of one run, written next to trajectory.jsonl. */
export function renderReport(args: { header: TrajectoryHeader; steps: StepRecord[]; footer: TrajectoryFooter; policyDescription: string; trajectoryPath: string; warnings?: string[] }): string {
  const { header, steps, footer } = args;
  const seconds = (Date.parse(footer.endedAt) - Date.parse(header.startedAt)) / 1000;
  const r = footer.reward;
  const lines: string[] = [
    `# Run ${header.runId}`,
    '',
    `| | |`,
    `|---|---|`,
    `| Task | ${header.task.id} (${header.task.format}, ${header.task.dir}) |`,
    `| Policy | ${args.policyDescription}${header.policy.model ? ` — ${header.policy.model}` : ''}${header.policy.n && header.policy.n > 1 ? `, n=${header.policy.n}` : ''} |`,
    ...(header.verifier ? [`| Verifier | ${header.verifier.mode} (n=${header.verifier.n}) |`] : []),
    `| Image | ${header.sandbox?.image ?? 'n/a'}${header.sandbox?.substitutedFrom ? ` (stand-in for ${header.sandbox.substitutedFrom})` : ''} |`,
    `| Tracing | ${header.sandbox ? (header.sandbox.tracing.available ? header.sandbox.tracing.method ?? 'on' : `off (${header.sandbox.tracing.reason ?? 'unavailable'})`) : 'n/a'} |`,
    `| Steps | ${steps.length} |`,
    `| Ended | ${footer.endReason}${footer.endMessage ? ` — ${oneLine(footer.endMessage)}` : ''} |`,
    `| Time | ${seconds.toFixed(1)} s |`,
    `| Tokens | ${footer.usage.promptTokens} prompt + ${footer.usage.completionTokens} completion${footer.usage.verifierCalls ? `; verifier ${footer.usage.verifierCalls} calls, ${footer.usage.verifierOutputTokens} output tokens` : ''} |`,
    `| Outcome | ${outcomeLine(footer)} |`,
    `| Reward | ${r ? r.total.toFixed(3) : 'not computed'}${isMasked(outcomeOf(footer)) ? ' (masked: not the agent\'s doing, left out of credit and training)' : ''} |`,
    ...(header.policy.kind === 'model' ? [`| Cost | ${costCell(steps)} |`] : []),
    `| Reward | ${r ? r.total.toFixed(3) : 'not computed'}${isMasked(outcomeOf(footer)) ? ' (masked: not the agent\'s doing, left out of credit and training)' : ''} |`,
    `| Trajectory | ${args.trajectoryPath} |`,
    '',
  ];
  if (r) {
    lines.push('## Reward', '');
    lines.push(`total = ${r.weights.tests} × tests + ${r.weights.judge} × judge = **${r.total.toFixed(3)}**`, '');
    if (r.tests !== undefined) lines.push(`- tests: ${r.tests.toFixed(3)}`);
    if (r.metrics) lines.push(`- metrics: ${Object.entries(r.metrics).map(([k, v]) => `${k} = ${v}`).join(', ')}; tests = ${r.metricsRule ?? 'reward'}`);
    if (r.testError) lines.push(`- tests could not be scored: ${r.testError.kind} — ${oneLine(r.testError.message)}`);
    if (r.judge) lines.push('missing' in r.judge ? `- judge: not run (${r.judge.missing})` : `- judge: ${r.judge.score.toFixed(3)} (${r.judge.backend}, prompt ${r.judge.promptVersion})`);
    if (r.pprs) lines.push(`- PPRS: pass=${r.pprs.pass}, Φ=${r.pprs.phi.toFixed(3)}, λ=${r.pprs.lambda}`);
    if (r.tampering?.length) {
      lines.push('', '**Reward tampering** (from the syscall trace and the verifier\'s pre-check):', '');
      for (const line of describeTamperFlags(r.tampering)) lines.push(`- ${line}`);
    }
    if (r.testOutcomes?.length) {
      lines.push('', '| Test | Status | Weight |', '|---|---|---|');
      for (const t of r.testOutcomes) lines.push(`| ${t.name} | ${t.status} | ${t.weight} |`);
    }
    lines.push('');
  }
  lines.push('## Steps', '', '| # | Actions | Exit codes | Duration |', '|---|---|---|---|');
  for (const s of steps) {
    const ran = s.actions.filter((a) => a.kind !== PARSE_ERROR);
    const kinds = [...ran.map((a) => a.kind), ...(s.parseErrors.length ? [`${s.parseErrors.length} parse error(s)`] : [])].join(', ') || 'no action';
    const codes = ran.filter((a) => a.kind === 'bash').map((a) => (a.timedOut ? 'timeout' : String(a.exitCode ?? '-'))).join(', ');
    lines.push(`| ${s.index} | ${kinds} | ${codes} | ${(s.durationMs / 1000).toFixed(1)} s |`);
  }
  lines.push('');
  const d = footer.depgpo;
  lines.push('## DepGPO', '');
  if (!d) {
    lines.push('Not computed.');
  } else {
    if (d.fallback) lines.push(`Fallback (every f_t = 1): ${d.fallback}`, '');
    // The verifier runtime's own reads (/etc/passwd, /tmp/#NNN, PID 1) stay in the trajectory, counted here.
    const e = agentVisibleResources(d.resources, trajectoryCommands(steps));
    const runtime = runtimeCount(e.runtime);
    lines.push(`Resource set E: ${e.files.length} file(s)${e.files.length ? ` (${e.files.slice(0, 5).join(', ')}${e.files.length > 5 ? ', …' : ''})` : ''}, ${e.ports.length} port(s), ${e.processes.length} process(es)${runtime ? ` (${runtime})` : ''}; ${d.edges.length} edge(s).`, '');
    lines.push('| Step | Score s_t | Factor f_t |', '|---|---|---|');
    d.stepScores.forEach((s, i) => lines.push(`| ${steps[i]?.index ?? i} | ${s.toFixed(3)} | ${(d.factors[i] ?? 1).toFixed(3)} |`));
  }
  if (args.warnings?.length) lines.push('', '## Warnings', '', ...args.warnings.map((w) => `- ${oneLine(w)}`));
  lines.push('');
  return lines.join('\n');
}

/** `failed — failing: test_x` : the outcome class and its one-line root cause. */
export function outcomeLine(footer: TrajectoryFooter): string {
  const o = outcomeOf(footer);
  return oneLine(`${o.class}${o.cause ? ` — ${o.cause}` : ''}`);
}

function costCell(steps: StepRecord[]): string {
  const priced = steps.filter((s) => s.costUsd !== undefined);
  return priced.length ? formatUsd(priced.reduce((a, s) => a + s.costUsd!, 0)) : 'unknown (no price for this model; see .tbrl/prices.json)';
}

function oneLine(s: string): string {
  return s.replace(/\s*\n\s*/g, ' ').replace(/\|/g, '\\|');
}
