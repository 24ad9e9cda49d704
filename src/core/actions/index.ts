export { parseTurn, hasAction } from './parser';
export { formatParseError } from './errors';
export { ACTION_EXAMPLES } from './examples';
export { ACTION_TAGS, ACTION_KINDS } from './schema';
export type * from './types';
export { executeTurn, executeAction, isFatalSandboxError, PARSE_ERROR_KIND, type TurnResult } from './execute';
export { renderTodos } from './handlers/todo';
