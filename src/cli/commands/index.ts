import type { CliCommand } from '../command';
import { exportLabelsCommand } from './export-labels';
import { graphCommand } from './graph';
import { creditCommand } from './credit';
import { replayCommand } from './replay';
import { runCommand } from './run';
import { judgeEvalCommand } from './judge-eval';
import { validateCommand } from './validate';
import { importCommand } from './import';
import { newTaskCommand } from './new-task';
import { gcCommand } from './gc';
import { trainCommands } from './train';
import { trainFetchCommand } from './train-fetch';
import { envServerCommand } from './env-server';
import { synthCommand } from './synth';
import { runWorkspaceCommand, saveTaskCommand } from './run-workspace';
import { evalCommand } from './eval';
import { evalCompareCommand } from './eval-compare';
import { evalTrialCommand } from './eval-trial';
import { serveCommand } from './serve';
import { demoCommand } from './demo';

/** Every `tbrl` sub-command. Adding one is one file and one line here. */
export const commands: CliCommand[] = [
  exportLabelsCommand,
  graphCommand,
  creditCommand,
  replayCommand,
  runCommand,
  judgeEvalCommand,
  validateCommand,
  importCommand,
  newTaskCommand,
  gcCommand,
  ...trainCommands,
  trainFetchCommand,
  envServerCommand,
  synthCommand,
  runWorkspaceCommand,
  saveTaskCommand,
  evalCommand,
  evalCompareCommand,
  evalTrialCommand,
  serveCommand,
  demoCommand,
];
