import { test } from 'node:test';
import assert from 'node:assert/strict';
import { main } from '../../src/cli/main';

async function captured(argv: string[]): Promise<{ code: number; out: string }> {
  const lines: string[] = [];
  const log = console.log;
  console.log = (...a: unknown[]) => void lines.push(a.join(' '));
  try {
    return { code: await main(argv), out: lines.join('\n') };
  } finally {
    console.log = log;
  }
}

test('`tbrl --help` lists eval but not the internal eval-trial, which still runs and explains itself when named', async () => {
  const help = await captured(['--help']);
  assert.equal(help.code, 0);
  assert.match(help.out, /^ {2}eval +Evaluate over many tasks/m);
  assert.doesNotMatch(help.out, /eval-trial/);
  const own = await captured(['eval-trial', '--help']);
  assert.equal(own.code, 0);
  assert.match(own.out, /Usage: tbrl eval-trial <spec\.json>/);
});
