import type { ParseArgsConfig } from 'node:util';

/** One `tbrl` sub-command: a file in src/cli/commands/ and a line in src/cli/commands/index.ts. */
export interface CliCommand {
  /** Space-separated for nested commands, e.g. `train submit`. */
  name: string;
  summary: string;
  usage: string;
  /** Internal plumbing (e.g. what Ray tasks run on cluster nodes): runs when named, left out of `tbrl --help`. */
  hidden?: boolean;
  options?: ParseArgsConfig['options'];
  /** Returns the process exit code. */
  run(args: { positionals: string[]; values: Record<string, string | boolean | (string | boolean)[] | undefined> }): Promise<number>;
}

/** A user error on the command line: printed without a stack trace, exit code 2. */
export class UsageError extends Error {}
