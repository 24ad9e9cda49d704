import type { Task } from '../model';

/** A file or tree a loaded task must keep inside its directory, and what to call it in the error. */
export interface ConfinedEntry {
  /** Path relative to the task directory. */
  path: string;
  key: string;
}

/** The scaffold's shared template parts; each format lays them out its own way. */
export interface ScaffoldParts {
  dockerfile: string;
  /** tests/test_outputs.py */
  tests: string;
  /** test_weights.json text */
  weights: string;
  /** The reference solution script. */
  solution: string;
  /** The pytest command line that prints the -rA summary (run from /app). */
  pytest: string;
}

/** What a saved workspace run holds, laid out by each format its own way. */
export interface SavedRunParts {
  dockerfile: string;
  /** tests/test_outputs.py */
  tests: string;
  /** test_weights.json text */
  weights: string;
  /** The reference solution script (replays the run's changes). */
  solution: string;
  /** The run's changes as a patch, kept beside the solution. */
  changes: string;
  /** Its file name, e.g. changes.patch. */
  changesFile: string;
  /** `cd <workspace path in the container>`, for the test runner. */
  cd: string;
  /** The pytest command line that prints the -rA summary. */
  pytest: string;
}

/**
 * One on-disk task format: how to recognise, read and write a task directory in it. load.ts,
 * write.ts, confine.ts, static-checks.ts, scaffold.ts and the front ends look formats up here;
 * none of them names a format. The format's other facts (file names, markers) stay in its file.
 */
export interface TaskFormatAdapter<Id extends string = string> {
  /** The `Task.format` value this adapter reads and writes, and the canonical `--format` value. */
  readonly id: Id;
  /** Other `--format` spellings accepted for it (e.g. `tb`). */
  readonly aliases: readonly string[];
  /** Name for sentences: "Wrote a <label> task". */
  readonly label: string;
  /** Name with the version read, for error messages: "Terminal-Bench 1.x". */
  readonly fullName: string;
  /** The files it lays out, in one line (the editor's new-task picker shows it). */
  readonly summary: string;
  /** The config file whose presence marks a task directory in this format. */
  readonly taskFile: string;
  /** The file an editor opens to edit the instruction. */
  readonly instructionFile: string;
  /** Root entries that are the format itself, not the image's build context or the user's own files. */
  readonly structure: ReadonlySet<string>;
  /** Files the reader opens (and might quote in a parse error); confined before any is opened. */
  readonly readsAtLoad: readonly string[];
  /** What confine.ts checks beyond the shared paths (tests/, weights, solution script, solution.yaml). */
  readonly confine: {
    /** Compose file whose privilege keys are refused. */
    composeFile: string;
    /** Named as the origin of a build context that escapes. */
    contextOrigin: string;
    /** Named as the origin of a test runner that escapes. */
    runnerOrigin: string;
    files: readonly ConfinedEntry[];
    trees: readonly ConfinedEntry[];
  };
  /** Compose file the static checks read for the services tbrl will not start (undefined: none). */
  readonly staticCompose?: string;
  /** Extra scripts the verifier ships beside a task's own runner (Terminal-Bench's harness helpers). */
  verifierScripts?(runner: string, shipped: (name: string) => boolean): Array<{ name: string; content: string; mode: number }>;
  /** Is `dir` a task directory in this format? */
  detect(dir: string): Promise<boolean>;
  /** Read `dir` into the shared Task model (not yet confined: load.ts does that). */
  read(dir: string): Promise<Task>;
  /** Write `task` (of any format) into the empty directory `dir`, pushing what it cannot carry to `warnings`. */
  write(task: Task, dir: string, warnings: string[]): Promise<void>;
  /**
   * Where the oracle finds the task's solution directory in the container (Harbor's oracle uploads
   * solution/ to /solution); undefined: the format's solution is a script run as is.
   */
  readonly oracleSolutionDir?: string;
  /** `tbrl save-task`: a workspace run saved as a task in this format (save-task.ts fills the parts). */
  readonly savedRun: {
    /** Directory (relative to the task) that holds the image's build context. */
    environmentDir: string;
    files(parts: SavedRunParts): Record<string, string>;
  };
  /** `tbrl new-task`: the task.yaml/task.toml metadata default and the files of a new task. */
  readonly scaffold: {
    metadata: Record<string, unknown>;
    files(task: Task, parts: ScaffoldParts): Record<string, string>;
  };
}
