import type { Finding, SourceText } from './static-checks';

/** What the Harbor checks read: the runtime reading of task.toml and the verifier script. */
export interface HarborStaticInput {
  /** Fields tbrl refuses to run with (HarborRuntime.refusals). */
  refusals: string[];
  /** Keys Harbor does not know or that have no effect here (HarborRuntime.ignored). */
  ignored?: string[];
  /** Compose services besides `main`, with the compose file's path. */
  sidecars: string[];
  composeFile?: string;
  /** tests/test.sh (or the first step's). */
  runner?: SourceText;
}

/** Comment-free, non-blank lines of a shell script other than its shebang and `set` lines. */
function commandLines(script: string): string[] {
  return script.split('\n').map((l) => l.trim()).filter((l) => l !== '' && !l.startsWith('#') && !/^set\s/.test(l));
}

/**
 * Harbor tasks get the warnings Terminal-Bench tasks get for what will not run as written: the
 * fields tbrl refuses (a run stops with the same sentence), and compose sidecars (started here on the
 * task's own network, with only their image/build, environment, command, entrypoint and healthcheck).
 * A test.sh counts as tests when it runs something: inline checks need no pytest file.
 */
export function checkHarbor(input: HarborStaticInput): Finding[] {
  const findings: Finding[] = input.refusals.map((message) => ({ check: 'environment', severity: 'warning', file: 'task.toml', message: `${message} tbrl refuses to run the task until this changes.` }));
  for (const message of input.ignored ?? []) findings.push({ check: 'environment', severity: 'warning', file: 'task.toml', message });
  if (input.sidecars.length > 0) {
    findings.push({
      check: 'environment',
      severity: 'warning',
      ...(input.composeFile ? { file: input.composeFile } : {}),
      message: `compose services besides main (${input.sidecars.join(', ')}) run as sidecars on the task's own network, reachable by service name; only their image/build, environment, command, entrypoint and healthcheck are applied.`,
    });
  }
  if (input.runner && commandLines(input.runner.content).length === 0) {
    findings.push({ check: 'tests', severity: 'error', file: input.runner.path, message: `${input.runner.path} runs nothing, so the verifier can write no reward. Make it check the container and write /logs/verifier/reward.txt.` });
  }
  return findings;
}
