import type { CliCommand } from '../command';

/** Every `tbrl` sub-command. Adding one is one file and one line here. */
export const commands: CliCommand[] = [];
