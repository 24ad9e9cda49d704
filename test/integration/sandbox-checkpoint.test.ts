import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createDockerProvider, LABEL_KIND, LABEL_PID, LABEL_RUN, LABEL_STEP } from '../../src/core/sandbox/index';

const provider = createDockerProvider();
const runId = `test-checkpoint-${process.pid}`;

describe('checkpoints', () => {
  it('commits a step and forks a new container with files, cwd and environment restored', async () => {
    const sb = await provider.create({ image: { kind: 'image', image: 'debian:bookworm-slim' }, runId });
    let checkpoint;
    try {
      await sb.exec('mkdir -p /project/sub && cd /project/sub && echo "state at step 3" > notes.txt && export TASK_VAR="with spaces & \'quotes\'"');
      await sb.writeFile('/project/data.bin', Buffer.from([0, 1, 2, 3]));
      checkpoint = await sb.checkpoint(3);
      assert.equal(checkpoint.step, 3);
      assert.equal(checkpoint.runId, runId);
      assert.equal(checkpoint.cwd, '/project/sub');
      assert.equal(checkpoint.env.TASK_VAR, "with spaces & 'quotes'");
      const image = await provider.docker.getImage(checkpoint.imageId).inspect();
      assert.equal(image.Config.Labels[LABEL_KIND], 'checkpoint');
      assert.equal(image.Config.Labels[LABEL_STEP], '3');
      assert.equal(image.Config.Labels[LABEL_RUN], runId);
      // Later changes in the original do not leak into the checkpoint.
      await sb.exec('echo "after the checkpoint" > notes.txt');
    } finally {
      await sb.close();
    }

    const forks = await Promise.all([provider.fork(checkpoint, { runId: `${runId}-a` }), provider.fork(checkpoint, { runId: `${runId}-b` })]);
    try {
      for (const fork of forks) {
        const r = await fork.exec('pwd; cat notes.txt; echo "$TASK_VAR"; od -An -tu1 /project/data.bin');
        assert.equal(r.output, "/project/sub\nstate at step 3\nwith spaces & 'quotes'\n   0   1   2   3\n");
        const labels = (await provider.docker.getContainer(fork.info.containerId).inspect()).Config.Labels;
        assert.equal(labels[LABEL_KIND], 'sandbox');
      }
      // Branches are independent.
      await forks[0].exec('echo branch-a > notes.txt');
      assert.equal((await forks[1].exec('cat notes.txt')).output, 'state at step 3\n');
    } finally {
      await Promise.all(forks.map((f) => f.close()));
      await provider.removeCheckpoint(checkpoint);
    }
    await assert.rejects(provider.docker.getImage(checkpoint.imageId).inspect(), /no such image/i);
  });

  it('gc removes checkpoint images of dead runs only', async () => {
    const sb = await provider.create({ image: { kind: 'image', image: 'debian:bookworm-slim' }, runId });
    const cp = await sb.checkpoint(1);
    const deadPid = spawnSync(process.execPath, ['-e', 'console.log(process.pid)'], { encoding: 'utf8' }).stdout.trim();
    const orphan = (await provider.docker.getContainer(sb.info.containerId).commit({
      repo: 'tbrl-checkpoint/test-orphan',
      tag: String(process.pid),
      changes: [`LABEL ${LABEL_KIND}=checkpoint`, `LABEL ${LABEL_PID}=${deadPid}`],
    })) as { Id: string };
    await sb.close();
    try {
      const r = await provider.gc();
      assert.ok(r.images >= 1);
      await assert.rejects(provider.docker.getImage(orphan.Id).inspect(), /no such image/i);
      // This process is alive: its checkpoint stays.
      await provider.docker.getImage(cp.imageId).inspect();
    } finally {
      await provider.docker.getImage(orphan.Id).remove({ force: true }).catch(() => undefined);
      await provider.removeCheckpoint(cp);
    }
  });
});
