import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { SETTING_DEFAULTS, readSettings, VERIFIER_MODE_VALUES } from '../../src/extension/settings';

// The extension's command table imports vscode, so its ids are read from the sources here.
const pkg = JSON.parse(readFileSync('package.json', 'utf8'));
const props: Record<string, { default: unknown; enum?: string[] }> = pkg.contributes.configuration.properties;

test('every tbrl.* setting in package.json is read by readSettings with the same default, and the reader reads no undeclared key', () => {
  const declared = Object.keys(props).filter((k) => k.startsWith('tbrl.')).map((k) => k.slice(5));
  const read = new Set<string>();
  readSettings((k) => {
    read.add(k);
    return undefined;
  });
  // docker.socketPath and sandbox.baseImageMap are shared with the CLI side; they flow through the same reader.
  assert.deepEqual([...read].sort(), declared.sort());
  for (const [k, v] of Object.entries(SETTING_DEFAULTS)) assert.deepEqual(props[`tbrl.${k}`].default, v, `default of tbrl.${k}`);
  assert.deepEqual(props['tbrl.verifier.mode'].enum, [...VERIFIER_MODE_VALUES]);
});

test('readSettings names each bad value and falls back to its default', () => {
  const values: Record<string, unknown> = { 'model.n': 0, 'verifier.mode': 'best-of', 'limits.maxSteps': 2.5, 'model.temperature': 7, 'sandbox.baseImageMap': { 'python:3.13': 3, 'ubuntu:22.04': 'tbrl-standin/ubuntu:latest' }, 'model.baseUrl': 'http://h/v1' };
  const { settings, problems } = readSettings((k) => values[k]);
  assert.equal(settings.model.n, 1);
  assert.equal(settings.verifier.mode, 'none');
  assert.equal(settings.limits.maxSteps, 50);
  assert.equal(settings.model.temperature, undefined);
  assert.equal(settings.model.baseUrl, 'http://h/v1');
  assert.deepEqual(settings.sandbox.baseImageMap, { 'ubuntu:22.04': 'tbrl-standin/ubuntu:latest' });
  assert.equal(problems.length, 5);
  assert.match(problems.join('\n'), /tbrl\.model\.n must be a whole number >= 1 \(got 0\)/);
  assert.match(problems.join('\n'), /tbrl\.verifier\.mode "best-of" is not one of none, listwise/);
});

test('the command ids registered by the extension are exactly those contributed in package.json', () => {
  const dir = 'src/extension/commands';
  const ids = new Set<string>();
  for (const f of readdirSync(dir)) for (const m of readFileSync(`${dir}/${f}`, 'utf8').matchAll(/id: '(tbrl\.[A-Za-z.]+)'/g)) ids.add(m[1]);
  const contributed = pkg.contributes.commands.map((c: { command: string }) => c.command);
  assert.deepEqual([...ids].sort(), [...contributed].sort());
  const index = readFileSync(`${dir}/index.ts`, 'utf8');
  const listed = /COMMANDS: readonly CommandDef\[\] = \[([^\]]+)\]/.exec(index)![1].split(',').map((s) => s.trim());
  assert.equal(listed.length, contributed.length, 'every command module is in the COMMANDS list');
});

test('the debugger contribution: type tbrl, launch attributes match the adapter, snippets are valid', () => {
  const dbg = pkg.contributes.debuggers.find((d: { type: string }) => d.type === 'tbrl');
  assert.ok(dbg);
  const attrs = Object.keys(dbg.configurationAttributes.launch.properties);
  // LaunchArgs = the stepping runtime's attributes (RuntimeLaunchArgs, src/core/debug) + the editor's own.
  const launchArgs = readFileSync('src/extension/debug/launch-args.ts', 'utf8') + readFileSync('src/core/debug/runtime.ts', 'utf8');
  assert.match(launchArgs, /interface LaunchArgs extends [^{]*RuntimeLaunchArgs/);
  for (const a of attrs) assert.match(launchArgs, new RegExp(`\\b${a}\\?:`), `LaunchArgs declares ${a}`);
  for (const s of dbg.configurationSnippets) {
    assert.equal(s.body.type, 'tbrl');
    assert.ok(s.body.trajectory || s.body.task, `${s.label} names a trajectory or a task`);
  }
  assert.ok(pkg.activationEvents.includes('onDebugResolve:tbrl'));
  assert.match(pkg.scripts.package, /vsce package --no-dependencies/);
});

test('.vscodeignore lets only bundles, prompts, media, image recipes, the cage helper\'s source and the trainer bridge into the .vsix', () => {
  const lines = readFileSync('.vscodeignore', 'utf8').split('\n').filter((l) => l && !l.startsWith('#'));
  assert.equal(lines[0], '**');
  for (const l of lines.slice(1)) assert.match(l, /^!(dist\/(extension(-cli)?\.js|webview\/\*\.js|prompts\/\*\*|proto\/\*\*)|media\/\*\*|sandbox\/(images(\.json|\/\*\*)|cage\/\*\*)|trainer-bridge\/(pyproject\.toml|tbrl_bridge\/(\*\.py|presets\.json|algorithms\.json|estimators\/\*\.py))|package\.json|README\.md|LICENSE)$/);
  // The installed extension builds the command cage from its source (src/core/sandbox/cage.ts).
  assert.ok(lines.includes('!sandbox/cage/**'), 'sandbox/cage/cage.c ships in the .vsix');
  for (const shipped of ['!trainer-bridge/tbrl_bridge/*.py', '!trainer-bridge/tbrl_bridge/presets.json', '!trainer-bridge/tbrl_bridge/algorithms.json', '!trainer-bridge/tbrl_bridge/estimators/*.py']) assert.ok(lines.includes(shipped), `${shipped}: the editor bundles the bridge`);
});

test('the training and synthesis commands are contributed, registered in COMMANDS and reachable from the views', () => {
  const contributed = new Set(pkg.contributes.commands.map((c: { command: string }) => c.command));
  const index = readFileSync('src/extension/commands/index.ts', 'utf8');
  const listed = /COMMANDS: readonly CommandDef\[\] = \[([^\]]+)\]/.exec(index)![1].split(',').map((s) => s.trim());
  const expected: Record<string, [string, string]> = {
    'tbrl.startTraining': ['startTraining', 'start-training'],
    'tbrl.sendDataset': ['sendDataset', 'send-dataset'],
    'tbrl.synthesizeTasks': ['synthesizeTasks', 'synthesize-tasks'],
    'tbrl.openTrainerDashboard': ['openTrainerDashboard', 'open-trainer-dashboard'],
    'tbrl.runEvaluation': ['runEvaluation', 'run-evaluation'],
    'tbrl.cancelEvalJob': ['cancelEvalJob', 'cancel-eval-job'],
    'tbrl.resumeEvalJob': ['resumeEvalJob', 'resume-eval-job'],
    'tbrl.compareEvalJobs': ['compareEvalJobs', 'compare-eval-jobs'],
  };
  for (const [id, [name, file]] of Object.entries(expected)) {
    assert.ok(contributed.has(id), `${id} is in contributes.commands`);
    assert.ok(listed.includes(name), `${name} is in COMMANDS`);
    assert.match(readFileSync(`src/extension/commands/${file}.ts`, 'utf8'), new RegExp(`export const ${name}: CommandDef = \\{\\s*id: '${id.replace('.', '\\.')}'`));
  }
  const menus = JSON.stringify(pkg.contributes.menus);
  for (const id of Object.keys(expected)) assert.ok(menus.includes(`"command":"${id}"`), `${id} has a menu entry`);
  const jobItem = pkg.contributes.menus['view/item/context'].find((m: { command: string }) => m.command === 'tbrl.openTrainerDashboard');
  // The Trainer view gives job items contextValue tbrlJob or tbrlJobActive; the menu must match both.
  const when = /viewItem =~ \/(.+)\//.exec(jobItem.when)![1];
  for (const v of ['tbrlJob', 'tbrlJobActive']) assert.match(v, new RegExp(when));
});

test('the first-use walkthrough: four steps, each with an existing markdown file and links only to contributed commands', () => {
  const [w] = pkg.contributes.walkthroughs;
  assert.deepEqual(w.steps.map((s: { id: string }) => s.id), ['docker', 'runExample', 'traceGraph', 'connectCluster']);
  const contributed = new Set(pkg.contributes.commands.map((c: { command: string }) => c.command));
  for (const s of w.steps) {
    const md = readFileSync(s.media.markdown, 'utf8');
    assert.match(md, /^# /, `${s.media.markdown} has a title`);
    for (const m of String(s.description).matchAll(/\(command:([\w.]+)/g)) assert.ok(m[1].startsWith('workbench.') || contributed.has(m[1]), `${s.id} links to ${m[1]}`);
    for (const e of s.completionEvents as string[]) {
      const cmd = /^onCommand:(.+)$/.exec(e)?.[1];
      if (cmd) assert.ok(contributed.has(cmd), `${s.id} completes on contributed ${cmd}`);
    }
  }
  assert.ok(readFileSync('.vscodeignore', 'utf8').includes('!media/**'), 'walkthrough media ship in the .vsix');
});

test('every webview app has a stylesheet for the shared CSP page and no inline HTML sinks', () => {
  for (const app of readdirSync('webview').filter((d) => existsSync(`webview/${d}/main.ts`))) {
    readFileSync(`media/${app}.css`, 'utf8');
    const src = readFileSync(`webview/${app}/main.ts`, 'utf8');
    assert.doesNotMatch(src, /innerHTML|outerHTML|insertAdjacentHTML|\.html\(/, `${app} writes text only`);
  }
  for (const host of ['src/extension/graph/panel.ts', 'src/extension/trainer/dashboard.ts']) assert.match(readFileSync(host, 'utf8'), /webviewHtml\(/, `${host} uses the shared CSP page`);
});
