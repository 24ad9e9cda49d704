import type { CliCommand } from '../command';
import { UsageError } from '../command';
import { FORMAT_FLAGS, formatFromFlag, formatFlagsSentence, requireTaskFormat } from '../../core/tasks/formats';
import { scaffoldTask } from '../../core/tasks/scaffold';

export const newTaskCommand: CliCommand = {
  name: 'new-task',
  summary: 'Create a task directory (Terminal-Bench or Harbor) that validates out of the box',
  usage: [
    `new-task <dir> [--format ${FORMAT_FLAGS.join('|')}] [--instruction TEXT] [--author NAME] [--email ADDR]`,
    '',
    'Writes an instruction, a Dockerfile on the Terminal-Bench Python base (a local stand-in is used',
    'offline), a weighted pytest file and a reference solution. Edit tests and solution together with',
    'the instruction, then run `tbrl validate <dir>`.',
  ].join('\n'),
  options: {
    format: { type: 'string', default: 'tb' },
    instruction: { type: 'string' },
    author: { type: 'string' },
    email: { type: 'string' },
  },
  async run({ positionals, values }) {
    if (positionals.length !== 1) throw new UsageError('give exactly one directory, e.g. `tbrl new-task tasks/my-task`.');
    const format = formatFromFlag(values.format);
    if (!format) throw new UsageError(`--format must be ${formatFlagsSentence()}, not "${String(values.format)}".`);
    const author = values.author !== undefined || values.email !== undefined ? { name: values.author as string | undefined, email: values.email as string | undefined } : undefined;
    const result = await scaffoldTask(positionals[0], { format, instruction: values.instruction as string | undefined, author });
    console.log(`Created a ${requireTaskFormat(format).label} task in ${result.dir}:`);
    for (const f of result.files) console.log(`  ${f}`);
    if (values.instruction !== undefined) {
      console.log('\nThe tests and solution are the template: change them to match your instruction.');
    }
    console.log(`\nNext: tbrl validate ${positionals[0]}`);
    return 0;
  },
};
