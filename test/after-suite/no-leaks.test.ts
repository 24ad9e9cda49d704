import { it } from 'node:test';
import assert from 'node:assert/strict';
import Docker from 'dockerode';
import { LABEL_PROJECT, LABEL_RUN, LABEL_PID } from '../../src/core/sandbox/types';
import { LABEL_KIND } from '../../src/core/sandbox/docker-sandbox';
import { processAlive } from '../../src/core/sandbox/gc';

// Runs after every other suite (scripts/test.mjs): anything still labelled was leaked by a test
// (or by the code under test failing to clean up). Live processes other than the test run (a
// developer's own `tbrl run` in another terminal) are not counted.
const docker = new Docker(process.env.DOCKER_HOST ? undefined : { socketPath: '/var/run/docker.sock' });

function describeLeak(labels: Record<string, string> | undefined, what: string): string {
  return `${what} run=${labels?.[LABEL_RUN] ?? '?'} pid=${labels?.[LABEL_PID] ?? '?'}`;
}

it('leaves no container carrying the project label', async () => {
  const containers = await docker.listContainers({ all: true, filters: { label: [LABEL_PROJECT] } });
  const leaked = containers.filter((c) => !processAlive(Number(c.Labels[LABEL_PID])));
  assert.deepEqual(leaked.map((c) => describeLeak(c.Labels, `${c.Id.slice(0, 12)} ${c.Image} ${c.State}`)), []);
});

it('leaves no checkpoint image behind', async () => {
  const images = await docker.listImages({ all: true, filters: { label: [`${LABEL_KIND}=checkpoint`] } });
  const leaked = images.filter((i) => !processAlive(Number(i.Labels?.[LABEL_PID])));
  assert.deepEqual(leaked.map((i) => describeLeak(i.Labels ?? undefined, `${i.Id.slice(7, 19)} ${(i.RepoTags ?? []).join(',')}`)), []);
  const dangling = await docker.listImages({ filters: { dangling: ['true'], label: [LABEL_PROJECT] } });
  assert.deepEqual(dangling.map((i) => describeLeak(i.Labels ?? undefined, `dangling ${i.Id.slice(7, 19)}`)), []);
});
