export * from './types';
export { lineHunks, splitLines, countLines } from './linediff';
export { StraceParser, TRACED_SYSCALLS, markPath, type TraceEvent } from './strace-parser';
export { aggregate, isNoiseRead, isNoiseWrite, type RawCommandTrace } from './aggregate';
export { extractStdoutValues, MAX_STDOUT_VALUES } from './stdout-values';
export { TRACER_IMAGE } from './helper';
export { createTracedSandbox, toVerifierTrace, type TracedSandbox, type TracedSandboxOptions, type TracingStatus } from './traced-sandbox';
