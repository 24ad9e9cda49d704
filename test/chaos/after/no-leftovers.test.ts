/**
 * After the chaos cases: nothing the suite created is left — no container, no checkpoint image,
 * no volume carrying the project's labels for any run id the cases recorded. Cached task images
 * (tbrl-task/*, built once and reused by content hash) and the base images are expected to stay.
 * Only this suite's run ids are checked: other engineers' tests share the daemon.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import Docker from 'dockerode';
import { LABEL_PROJECT, LABEL_RUN } from '../../../src/core/sandbox/types';
import { chaosCase } from '../helpers/chaos';

const docker = new Docker(process.env.DOCKER_HOST ? undefined : { socketPath: '/var/run/docker.sock' });
const rowsFile = process.env.TBRL_CHAOS_ROWS;
const runIds = rowsFile && existsSync(rowsFile)
  ? [...new Set(readFileSync(rowsFile, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as { type: string; runId?: string }).filter((r) => r.type === 'run').map((r) => r.runId!))]
  : [];

chaosCase('after the suite: look for containers, images and volumes of every chaos run id', 'zero left (cached task and base images excepted)', async () => {
  assert.ok(runIds.length > 0 || !rowsFile, 'the cases recorded no run ids');
  const ours = (labels: Record<string, string> | null | undefined) => !!labels && runIds.includes(labels[LABEL_RUN]);
  const containers = (await docker.listContainers({ all: true, filters: { label: [LABEL_PROJECT] } })).filter((c) => ours(c.Labels));
  const images = (await docker.listImages({ all: true, filters: { label: [LABEL_RUN] } })).filter((i) => ours(i.Labels));
  const volumes = ((await docker.listVolumes({ filters: { label: [LABEL_PROJECT] } })).Volumes ?? []).filter((v) => ours(v.Labels));
  assert.deepEqual(containers.map((c) => `${c.Id.slice(0, 12)} ${c.Labels[LABEL_RUN]} ${c.State}`), []);
  assert.deepEqual(images.map((i) => `${i.Id.slice(7, 19)} ${i.Labels?.[LABEL_RUN]}`), []);
  assert.deepEqual(volumes.map((v) => v.Name), []);
  return `${runIds.length} run ids checked: 0 containers, 0 checkpoint images, 0 volumes`;
});
