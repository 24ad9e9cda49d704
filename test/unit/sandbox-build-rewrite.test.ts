import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rewriteHeredocs } from '../../src/core/sandbox/dockerfile-heredoc';
import { decodeBuildkitStatus, BuildkitProgress } from '../../src/core/sandbox/buildkit-trace';
import { locateStep } from '../../src/core/sandbox/build';

const DOCKERFILE = [
  '# syntax=docker/dockerfile:1.4',
  'FROM debian:bookworm-slim',
  'RUN <<EOF',
  'set -e',
  'echo "$HOME" > /x',
  'EOF',
  'RUN --mount=type=cache,target=/root/.cache python3 - <<\'PY\' > /out',
  'print("hi")',
  'PY',
  'COPY --chmod=755 <<-EOF /usr/local/bin/greet',
  '\t#!/bin/sh',
  '\techo greet',
  '\tEOF',
  'SHELL ["/bin/bash", "-o", "pipefail", "-c"]',
  'RUN <<EOF',
  '#!/usr/bin/env python3',
  'print(1)',
  'EOF',
  'RUN echo done',
].join('\n');

test('heredocs become instructions any builder runs, line for line', () => {
  const r = rewriteHeredocs(DOCKERFILE);
  const lines = r.dockerfile.split('\n');
  assert.equal(lines.length, DOCKERFILE.split('\n').length, 'every line keeps its number');
  assert.equal(r.droppedSyntax, 'docker/dockerfile:1.4');
  assert.equal(lines[0], '');
  // Alone: the body is the shell's command string.
  assert.equal(lines[2], 'RUN ["/bin/sh","-c","set -e\\necho \\"$HOME\\" > /x\\n"]');
  // Inside a command: the shell reads the heredoc itself; flags stay in front.
  assert.equal(lines[6], 'RUN --mount=type=cache,target=/root/.cache ["/bin/sh","-c","python3 - <<\'PY\' > /out\\nprint(\\"hi\\")\\nPY"]');
  // COPY: a context file with the body (tabs stripped for <<-).
  assert.equal(lines[9], 'COPY --chmod=755 .tbrl-heredoc/2-0/EOF /usr/local/bin/greet');
  assert.deepEqual(r.files.filter((f) => f.kind === 'file').map((f) => [f.path, f.content?.toString()]), [['.tbrl-heredoc/2-0/EOF', '#!/bin/sh\necho greet\n']]);
  // A shebang body runs as a script file, with the SHELL in force.
  assert.match(lines[14], /^RUN \["\/bin\/bash","-o","pipefail","-c","cat > \/tmp\/\.tbrl-heredoc-3 <<'TBRL_HEREDOC_EOF'\\n#!\/usr\/bin\/env python3\\nprint\(1\)\\nTBRL_HEREDOC_EOF\\n/);
  assert.equal(lines[18], 'RUN echo done');
  assert.equal(r.rewritten, 4);
});

test('a "<<" without a closing delimiter and a here-string are left alone', () => {
  const text = 'FROM x\nRUN cat <<< "hi"\nRUN cat <<EOF\nno end\n';
  assert.equal(rewriteHeredocs(text).dockerfile, text);
});

test('the failing BuildKit step is located on the author\'s line, heredocs included', () => {
  const sent = rewriteHeredocs(DOCKERFILE).dockerfile;
  assert.equal(locateStep(DOCKERFILE, sent, 'RUN echo done', 'Dockerfile'), 'line 19 of Dockerfile: RUN echo done');
  const heredocStep = sent.split('\n')[2];
  assert.equal(locateStep(DOCKERFILE, sent, heredocStep, 'Dockerfile'), 'line 3 of Dockerfile: RUN <<EOF');
});

test('BuildKit trace messages decode to vertex names, errors and logs', () => {
  // A real StatusResponse from engine 20.10: one vertex, started and completed.
  const s = decodeBuildkitStatus('CqIBCkdzaGEyNTY6NTZiZjVkY2QzOGVlMmY2MGY2NDZiMTViMWI5MWU0MGI1ZTgzNzVhNDU3NTcyZjg5MGVkYmNjYmQxNzE5MDgxMxo5W3N0YWdlLTAgMS8yXSBGUk9NIGRvY2tlci5pby9saWJyYXJ5L2RlYmlhbjpib29rd29ybS1zbGltIAEqDAi6577YBhCf0PSiAjIMCLrnvtgGEIuZ9qIC');
  assert.ok(s);
  assert.equal(s.vertexes[0].name, '[stage-0 1/2] FROM docker.io/library/debian:bookworm-slim');
  assert.equal(s.vertexes[0].started, true);
  assert.equal(s.vertexes[0].completed, true);
  assert.equal(decodeBuildkitStatus('////'), undefined);
  const lines: string[] = [];
  const p = new BuildkitProgress((l) => lines.push(l));
  p.push({ vertexes: [{ digest: 'd1', name: '[2/2] RUN make', started: true, completed: false, cached: false }], logs: [{ vertex: 'd1', msg: 'cc -c a.c\nerror: ' }] });
  p.push({ vertexes: [{ digest: 'd1', name: '', started: true, completed: true, cached: false, error: 'exit code: 2' }], logs: [{ vertex: 'd1', msg: 'boom\n' }] });
  assert.deepEqual(lines, ['[2/2] RUN make', '  cc -c a.c', '  error: boom']);
  assert.deepEqual(p.failed, { name: '[2/2] RUN make', error: 'exit code: 2' });
  assert.deepEqual(p.failedLog(), ['cc -c a.c', 'error: boom']);
});
