export { runTask, forkRun, type RunTaskOptions, type RunTaskResult, type RunProgress } from './run-task';
export { resolveRunConfig, readConfigFile, CONFIG_FILE, DEFAULT_MAX_STEPS, type RunConfigInput, type ResolvedRunConfig } from './config';
export { renderReport } from './report';
export { prepareFork, conversationThrough, type ForkSource, type PreparedFork } from './fork';
