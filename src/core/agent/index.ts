export type { Policy, PolicyContext, PolicyTurn } from './policy';
export { runAgentLoop, MAX_CONSECUTIVE_ERROR_TURNS, type LoopOptions, type LoopResult, type LoopLimits, type LoopEvent, type PendingTurn, type BeforeExecuteDecision } from './loop';
export { createOraclePolicy, oracleTurns, bashTurn, finishTurn } from './oracle';
export { ScriptedPolicy } from './scripted';
export { loadSystemPrompt, initialMessages, taskMessage, SYSTEM_PROMPT_VERSION } from './prompt';
export { splitTopLevelCommands } from './shell-split';
export { createModelPolicy, type ModelPolicyOptions } from './model-policy';
