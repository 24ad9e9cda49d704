import type { HarborRuntime } from './harbor-runtime';
import type { WritableFormat } from './formats';
/**
 * The task model shared by the on-disk formats (formats/: Terminal-Bench 1.x, Harbor) and by
 * devcontainer workspaces. Loaders fill it; writers serialise it; fields a format has that this
 * model does not name are kept in `extra` so a round trip loses nothing.
 */
export type TaskFormat = WritableFormat | 'devcontainer';

export interface Task {
  id: string;
  /** Absolute path of the task directory. */
  dir: string;
  format: TaskFormat;
  instruction: string;
  difficulty?: string;
  category?: string;
  tags: string[];
  /** Both formats name an author (task.yaml author_name/author_email; task.toml [metadata] or [task].authors). */
  author?: { name?: string; email?: string };
  /** Docker build context (absolute) and Dockerfile path relative to it. */
  environment: { context: string; dockerfile: string } | { image: string };
  agentTimeoutSec: number;
  testTimeoutSec: number;
  allowInternet: boolean;
  /** Terminal-Bench: run-tests.sh + tests/; Harbor: tests/test.sh. Paths absolute. */
  tests: {
    runner: string;
    dir: string;
    kind: 'pytest-summary' | 'harbor-reward';
    /**
     * Script to run when `runner` does not exist on disk: Terminal-Bench 1.x makes run-tests.sh
     * optional and then runs pytest on tests/test_outputs.py itself.
     */
    inlineRunner?: string;
  };
  /** Per-test weights from test_weights.json (Terminal-Bench-RL); undefined means equal weights. */
  testWeights?: Record<string, number>;
  /** Reference solution: a shell script (solution.sh / solution/solve.sh) or commands from solution.yaml. */
  solution?: { kind: 'script'; path: string } | { kind: 'commands'; commands: string[] };
  /** Tev tasks carry a progress contract (src/core/synth). */
  progressContract?: string;
  /** Harbor tasks: what task.toml asks of the runtime (its fields also stay verbatim in extra.taskToml). */
  harbor?: HarborRuntime;
  /** Format fields not modelled above, kept verbatim. */
  extra: Record<string, unknown>;
}
