// Reads node's TAP reporter output for the failures scripts/test.mjs repeats above its closing line.

/**
 * The failing tests of a TAP report (node's tap reporter): name, location and error of each
 * `not ok` (and the test-file line its error was thrown from), leaving out the suites that failed only because a subtest did.
 */
export function tapFailures(tap) {
  const lines = tap.split('\n');
  const out = [];
  for (let i = 0; i < lines.length; i++) {
    const head = /^(\s*)not ok \d+ - (.*)$/.exec(lines[i]);
    if (!head) continue;
    const indent = head[1].length + 2;
    const yaml = [];
    if (lines[i + 1]?.trim() === '---') {
      for (i += 2; i < lines.length && lines[i].trim() !== '...'; i++) yaml.push(lines[i].slice(indent));
    }
    const field = (k) => {
      const at = yaml.findIndex((l) => l.startsWith(`${k}:`));
      if (at < 0) return '';
      const v = yaml[at].slice(k.length + 1).trim();
      if (/^'.*'$/.test(v)) return v.slice(1, -1).replace(/''/g, "'");
      if (/^".*"$/.test(v)) {
        try { return JSON.parse(v); } catch { return v.slice(1, -1); }
      }
      if (!/^[|>]/.test(v)) return v;
      const body = [];
      for (let j = at + 1; j < yaml.length && (yaml[j].startsWith('  ') || yaml[j].trim() === ''); j++) body.push(yaml[j].slice(2));
      return body.join('\n').trim();
    };
    if (field('failureType') === 'subtestsFailed') continue;
    // The line of the test file the error came from, which `location` (the test's own line) is not.
    const thrownAt = field('stack').split('\n').find((l) => /[\\/]test[\\/]/.test(l))?.trim() ?? '';
    out.push({ name: head[2], location: field('location'), thrownAt, error: field('error') });
  }
  return out;
}
