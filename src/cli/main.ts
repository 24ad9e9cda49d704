import { parseArgs } from 'node:util';
import type { CliCommand } from './command';
import { UsageError } from './command';
import { TbrlError } from '../core/errors';
import { VERSION } from '../core/version';

// The commands (and through them Docker, tracing, the model clients…) are loaded only once a command
// runs: `tbrl --version` then costs little more than Node's own start.
async function loadCommands(): Promise<CliCommand[]> {
  return (await import('./commands/index.js')).commands;
}

function help(commands: CliCommand[]): string {
  const listed = commands.filter((c) => !c.hidden);
  const width = Math.max(...listed.map((c) => c.name.length), 4);
  return [
    `tbrl ${VERSION} — build, debug and train terminal agents`,
    '',
    'Usage: tbrl <command> [options]',
    '',
    ...listed.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    'Run `tbrl <command> --help` for the options of one command.',
  ].join('\n');
}

export async function main(argv: string[]): Promise<number> {
  if (argv[0] === '--version') {
    console.log(VERSION);
    return 0;
  }
  const commands = await loadCommands();
  if (argv.length === 0 || argv[0] === '--help' || argv[0] === '-h') {
    console.log(help(commands));
    return 0;
  }
  // Longest match first so `train submit` wins over a hypothetical `train`.
  const command = [...commands]
    .sort((a, b) => b.name.split(' ').length - a.name.split(' ').length)
    .find((c) => c.name.split(' ').every((part, i) => argv[i] === part));
  if (!command) {
    console.error(`tbrl: unknown command '${argv[0]}'.\n\n${help(commands)}`);
    return 2;
  }
  const rest = argv.slice(command.name.split(' ').length);
  if (rest.includes('--help') || rest.includes('-h')) {
    console.log(`${command.summary}\n\nUsage: tbrl ${command.usage}`);
    return 0;
  }
  try {
    const { positionals, values } = parseArgs({ args: rest, options: command.options ?? {}, allowPositionals: true, strict: true });
    return await command.run({ positionals, values });
  } catch (err) {
    if (err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      console.error(`tbrl ${command.name}: ${(err as Error).message}\nUsage: tbrl ${command.usage}`);
      return 2;
    }
    if (err instanceof TbrlError) {
      console.error(`tbrl ${command.name}: ${err.message}`);
      return 1;
    }
    throw err;
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
}
