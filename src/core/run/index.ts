export { runTask, forkRun, runPhases, PIPELINE, type RunTaskOptions, type RunTaskResult, type RunProgress, type RunOutcome, type RunContext, type RunPhase, type PhaseName } from './run-task';
export { resolveRunConfig, readConfigFile, CONFIG_FILE, DEFAULT_MAX_STEPS, type RunConfigInput, type ResolvedRunConfig } from './config';
export { renderReport } from './report';
export { prepareFork, conversationThrough, type ForkSource, type PreparedFork } from './fork';
