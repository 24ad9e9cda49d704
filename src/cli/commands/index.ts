import type { CliCommand } from '../command';
import { exportLabelsCommand } from './export-labels';

/** Every `tbrl` sub-command. Adding one is one file and one line here. */
export const commands: CliCommand[] = [
  exportLabelsCommand,
];
