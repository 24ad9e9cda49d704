import { join } from 'node:path';
import { TbrlError } from '../errors';
import type { Sandbox, SandboxProvider } from '../sandbox/types';
import type { Task } from '../tasks/model';
import type { HarborStep } from '../tasks/harbor-runtime';
import { resolveEnvTemplates } from '../tasks/harbor-runtime';
import { harborRewardOf, runTests, type TestRunResult } from '../reward/tests';
import { tarOf } from '../reward/archive';
import { exists } from '../tasks/fsutil';
import { installSolution, verifierTestOptions, waitHealthy, withVerifierSandbox } from './task-sandbox';
import { runAgentLoop, type LoopOptions, type LoopResult } from '../agent/loop';
import { taskMessage } from '../agent/prompt';
import type { Policy } from '../agent/policy';

/**
 * Harbor `[[steps]]`: one environment, the steps in order, each with its own instruction, optional
 * workdir/ upload and setup.sh, healthcheck, agent (here: `act`) and verifier (the task's tests/ with
 * the step's tests/ layered over it, the step's verifier env). A step whose reward misses its
 * `min_reward` (a crashed verifier counts as -inf) stops the remaining steps. The trial's reward is
 * Harbor's multi_step_reward_strategy: `mean` (per-key means over the steps that were verified) or
 * `final` (the last verified step's rewards).
 */
export interface StepResult { name: string; run: TestRunResult; metrics: Record<string, number> }

export function stepTaskOf(task: Task, step: HarborStep): Task {
  return {
    ...task,
    id: `${task.id}/${step.name}`,
    instruction: step.instruction,
    agentTimeoutSec: step.agentTimeoutSec ?? task.agentTimeoutSec,
    testTimeoutSec: step.verifierTimeoutSec ?? task.testTimeoutSec,
    solution: step.solution ? { kind: 'script', path: step.solution } : undefined,
    tests: { ...task.tests, kind: 'harbor-reward' },
    harbor: task.harbor ? { ...task.harbor, steps: undefined } : undefined,
  };
}

function belowMin(step: HarborStep, r: StepResult | undefined): string | undefined {
  if (step.minReward === undefined) return undefined;
  const gates = typeof step.minReward === 'number' ? { reward: step.minReward } : step.minReward;
  for (const [key, min] of Object.entries(gates)) {
    const value = r?.run.error ? -Infinity : r?.metrics[key] ?? -Infinity;
    if (value < min) return `${key} = ${value === -Infinity ? (r?.run.error ? 'none (verifier error)' : 'missing') : value} < min_reward ${min}`;
  }
  return undefined;
}

export async function runHarborSteps(
  task: Task,
  sandbox: Sandbox,
  provider: SandboxProvider,
  runId: string,
  act: (stepTask: Task, step: HarborStep) => Promise<{ error?: string }>,
  hostEnv: NodeJS.ProcessEnv = process.env,
): Promise<{ run?: TestRunResult; error?: string; steps: StepResult[]; stoppedAt?: string }> {
  const rt = task.harbor;
  if (!rt?.steps) throw new TbrlError('TASK_NO_STEPS', `Task ${task.id} has no [[steps]]`, 'Call runHarborSteps only for multi-step Harbor tasks.');
  const results: StepResult[] = [];
  let stoppedAt: string | undefined;
  for (const step of rt.steps) {
    const stepTask = stepTaskOf(task, step);
    if (step.workdirDir) {
      const cwd = (await sandbox.exec('pwd', { timeoutMs: 10_000 })).output.trim() || '/';
      await sandbox.putArchive(await tarOf(step.workdirDir), cwd);
      if (await exists(join(step.workdirDir, 'setup.sh'))) {
        const setup = await sandbox.exec(`bash ./setup.sh`, { timeoutMs: 120_000 });
        if (setup.exitCode !== 0) return { error: `step ${step.name}: workdir/setup.sh exited with ${setup.exitCode}: ${setup.output.trim().split('\n').slice(-3).join(' | ')}`, steps: results };
      }
    }
    if (step.healthcheck) await waitHealthy(sandbox, step.healthcheck, `[steps.healthcheck] of step ${step.name}`);
    const acted = await act(stepTask, step);
    if (acted.error) return { error: `step ${step.name}: ${acted.error}`, steps: results };
    const base = verifierTestOptions(task, hostEnv);
    const env = { ...base.env, ...resolveEnvTemplates(step.verifierEnv, hostEnv, `[steps.verifier.env] of step ${step.name}`) };
    const run = await withVerifierSandbox(stepTask, sandbox, provider, runId, (v) =>
      runTests({ task: stepTask, sandbox: v, testsDirs: [task.tests.dir, ...(step.testsDir ? [step.testsDir] : [])], ...base, env }), hostEnv);
    const metrics = run.metrics ?? (run.tests !== undefined ? { reward: run.tests } : {});
    const result = { name: step.name, run, metrics };
    results.push(result);
    const gate = belowMin(step, result);
    if (gate) {
      stoppedAt = `${step.name} (${gate})`;
      break;
    }
  }
  return { run: aggregate(results, rt.stepRewardStrategy, stoppedAt), steps: results, ...(stoppedAt ? { stoppedAt } : {}) };
}

function aggregate(results: StepResult[], strategy: 'mean' | 'final', stoppedAt: string | undefined): TestRunResult {
  const verified = results.filter((r) => !r.run.error);
  const crashed = results.find((r) => r.run.error);
  const log = results.map((r) => `--- step ${r.name}\n${r.run.log.slice(-2000)}`).join('\n');
  const durationMs = results.reduce((a, r) => a + r.run.durationMs, 0);
  const outcomes = results.map((r) => ({ name: `step:${r.name}`, status: (r.run.tests ?? 0) >= 1 ? 'passed' as const : 'failed' as const, weight: 1 / results.length }));
  if (verified.length === 0) {
    return { durationMs, log, error: crashed?.run.error ?? { kind: 'no-tests', message: 'no step was verified', logTail: '' } };
  }
  let metrics: Record<string, number>;
  if (strategy === 'final') metrics = verified[verified.length - 1].metrics;
  else {
    const keys = [...new Set(verified.flatMap((r) => Object.keys(r.metrics)))];
    metrics = Object.fromEntries(keys.map((k) => [k, verified.reduce((a, r) => a + (r.metrics[k] ?? 0), 0) / verified.length]));
  }
  const chosen = harborRewardOf(metrics)!;
  const rule = `${strategy === 'final' ? 'final step' : `mean over ${verified.length} verified step(s)`} (${results.map((r) => `${r.name}: ${r.run.error ? 'verifier error' : r.run.tests}`).join(', ')})${stoppedAt ? `; stopped after ${stoppedAt}` : ''}; reward = ${chosen.rule}`;
  return { tests: Math.round(chosen.value * 1e12) / 1e12, outcomes, metrics, metricsRule: rule, durationMs, log, ...(crashed ? {} : {}) };
}

/**
 * `tbrl run` of a multi-step task: one agent conversation over the steps. Step 1 starts it with
 * the task message; each later step arrives as a new user message carrying that step's instruction,
 * with the agent's todos and scratchpad kept. Each step's loop has the step's own timeout; the
 * oracle policy runs each step's solve.sh (at /solution). Step indices continue across steps.
 */
export async function runStepsWithAgent(o: {
  task: Task;
  sandbox: Sandbox;
  provider: SandboxProvider;
  runId: string;
  loopOptions: LoopOptions;
  /** Builds the oracle for a step (undefined: the run's own policy goes on). */
  oracleFor?: (stepTask: Task) => Policy;
  hostEnv: NodeJS.ProcessEnv;
  onStepStart?: (step: HarborStep) => void;
}): Promise<{ loop: LoopResult; testRun?: TestRunResult; stoppedAt?: string }> {
  let loop: LoopResult | undefined;
  const stepsRun = await runHarborSteps(o.task, o.sandbox, o.provider, o.runId, async (stepTask, step) => {
    o.onStepStart?.(step);
    if (o.oracleFor) await installSolution(stepTask, o.sandbox, o.hostEnv);
    const base = o.loopOptions;
    const resume = loop
      ? { messages: [...loop.messages, { role: 'user' as const, content: taskMessage(stepTask) }], state: loop.state, nextStep: (loop.steps.at(-1)?.index ?? -1) + 1 }
      : undefined;
    const used = loop ? loop.steps.length : 0;
    const result = await runAgentLoop({
      ...base,
      task: stepTask,
      ...(o.oracleFor ? { policy: offsetPolicy(o.oracleFor(stepTask), resume?.nextStep ?? 0) } : {}),
      limits: { ...base.limits, maxSteps: Math.max(0, base.limits.maxSteps - used), maxTimeMs: Math.min(base.limits.maxTimeMs ?? Infinity, stepTask.agentTimeoutSec * 1000) },
      ...(resume ? { resume } : {}),
    });
    loop = loop ? { ...result, steps: [...loop.steps, ...result.steps], durationMs: loop.durationMs + result.durationMs, usage: { promptTokens: loop.usage.promptTokens + result.usage.promptTokens, completionTokens: loop.usage.completionTokens + result.usage.completionTokens } } : result;
    if (result.endReason === 'interrupted' || result.endReason === 'cancelled') return { error: `the run was ${result.endReason}` };
    return {};
  }, o.hostEnv);
  if (!loop) throw new TbrlError('STEP_FAILED', stepsRun.error ?? 'no step ran', 'Check steps/<name>/workdir/setup.sh and the step healthchecks.');
  if (stepsRun.error && !stepsRun.run) loop = { ...loop, endMessage: stepsRun.error };
  return { loop, ...(stepsRun.run ? { testRun: stepsRun.run } : {}), ...(stepsRun.stoppedAt ? { stoppedAt: stepsRun.stoppedAt } : {}) };
}

/** A scripted (oracle) policy counts its turns from 0; a later step's loop starts at a later index. */
function offsetPolicy(inner: Policy, offset: number): Policy {
  if (offset === 0) return inner;
  return Object.assign(Object.create(inner) as Policy, { next: (context: Parameters<Policy['next']>[0]) => inner.next({ ...context, step: context.step - offset }) });
}
