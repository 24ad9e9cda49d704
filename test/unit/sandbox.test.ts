import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import fc from 'fast-check';
import { CappedOutput } from '../../src/core/sandbox/output-cap';
import { ansiCQuote } from '../../src/core/sandbox/bash-quote';
import { DockerDemuxer } from '../../src/core/sandbox/demux';
import { findFromLines, rewriteFrom } from '../../src/core/sandbox/dockerfile-from';
import { findSubstitute, loadBaseImageMap, normalizeImageRef } from '../../src/core/sandbox/base-images';
import { mapDockerError } from '../../src/core/sandbox/docker-client';
import { ContainerGoneError, DiskFullError, DockerDiedError, DockerRefusedError, DockerUnavailableError, statusCode } from '../../src/core/sandbox/errors';

describe('CappedOutput', () => {
  it('keeps head and tail and counts exactly what was dropped, however the input is chunked', () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 300 }), { maxLength: 20 }), fc.integer({ min: 0, max: 500 }), (chunks, max) => {
        const all = Buffer.concat(chunks.map((c) => Buffer.from(c)));
        const cap = new CappedOutput(max);
        for (const c of chunks) cap.push(Buffer.from(c));
        const head = Math.ceil(max / 2);
        const tail = max - head;
        assert.equal(cap.totalBytes, all.length);
        assert.equal(cap.droppedBytes, Math.max(0, all.length - max));
        if (all.length <= max) assert.equal(cap.text(), all.toString('utf8'));
        else {
          const text = cap.text();
          assert.ok(text.startsWith(all.subarray(0, head).toString('utf8')));
          assert.ok(text.endsWith(tail ? all.subarray(all.length - tail).toString('utf8') : ''));
          assert.match(text, new RegExp(`${all.length - max} bytes of output dropped`));
        }
      }),
    );
  });
});

describe('ansiCQuote', () => {
  it('round-trips any bytes except NUL through bash', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 0, maxLength: 64 }).map((a) => Buffer.from(a.filter((b) => b !== 0))), (bytes) => {
        const r = spawnSync('bash', ['-c', `printf %s ${ansiCQuote(bytes)}`]);
        assert.deepEqual(r.stdout, bytes);
      }),
      { numRuns: 40 },
    );
  });
});

describe('DockerDemuxer', () => {
  it('reassembles frames split at any byte', () => {
    const frame = (type: number, s: string) => {
      const body = Buffer.from(s);
      const h = Buffer.alloc(8);
      h[0] = type;
      h.writeUInt32BE(body.length, 4);
      return Buffer.concat([h, body]);
    };
    const wire = Buffer.concat([frame(1, 'hello '), frame(2, 'err'), frame(1, 'world')]);
    for (let split = 0; split <= wire.length; split++) {
      const got: string[] = [];
      const d = new DockerDemuxer((k, p) => got.push(`${k}:${p}`));
      d.push(wire.subarray(0, split));
      d.push(wire.subarray(split));
      assert.equal(got.filter((g) => g.startsWith('stdout')).map((g) => g.slice(7)).join(''), 'hello world');
      assert.equal(got.filter((g) => g.startsWith('stderr')).map((g) => g.slice(7)).join(''), 'err');
    }
  });
});

describe('Dockerfile FROM lines', () => {
  it('resolves ARGs, skips stage references and scratch, and rewrites only the image token', () => {
    const df = 'ARG BASE=python:3.13-slim\nFROM --platform=linux/amd64 ${BASE} AS build\nRUN make\nFROM build\nFROM scratch\nFROM ubuntu:24.04\n';
    const froms = findFromLines(df, {});
    assert.deepEqual(froms.map((f) => [f.image, f.stageRef]), [['python:3.13-slim', false], ['build', true], ['scratch', true], ['ubuntu:24.04', false]]);
    assert.equal(findFromLines(df, { BASE: 'debian:12' })[0].image, 'debian:12');
    const rewritten = rewriteFrom(df, froms[0], 'tbrl-standin/python:3');
    assert.match(rewritten, /^FROM --platform=linux\/amd64 tbrl-standin\/python:3 AS build$/m);
  });
});

describe('base-image map', () => {
  it('matches the built-in globs and normalises references', () => {
    const map = loadBaseImageMap();
    assert.equal(normalizeImageRef('docker.io/library/python:3.13-slim'), 'python:3.13-slim');
    assert.equal(normalizeImageRef('ubuntu'), 'ubuntu:latest');
    assert.equal(findSubstitute(map, 'python:3.13-slim'), 'tbrl-standin/python:3');
    assert.equal(findSubstitute(map, 'docker.io/library/ubuntu:22.04'), 'tbrl-standin/ubuntu:latest');
    assert.equal(findSubstitute(map, 'ghcr.io/laude-institute/t-bench/python-3-13:20250620'), 'tbrl-standin/python:3');
    assert.equal(findSubstitute(map, 'node:20'), undefined);
  });

  it('lets the user map (option, then TBRL_BASE_IMAGE_MAP file) override the built-in one', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tbrl-map-'));
    const saved = process.env.TBRL_BASE_IMAGE_MAP;
    try {
      writeFileSync(join(dir, 'map.json'), JSON.stringify({ 'python:3.13*': 'my/python:3.13', 'node:*': 'my/node' }));
      process.env.TBRL_BASE_IMAGE_MAP = join(dir, 'map.json');
      const map = loadBaseImageMap({ baseImageMap: { 'node:20': 'option/node' } });
      assert.equal(findSubstitute(map, 'python:3.13-slim'), 'my/python:3.13');
      assert.equal(findSubstitute(map, 'python:3.12-slim'), 'tbrl-standin/python:3');
      assert.equal(findSubstitute(map, 'node:20'), 'option/node');
      assert.equal(findSubstitute(map, 'node:18'), 'my/node');
      writeFileSync(join(dir, 'map.json'), '{ not json');
      assert.throws(() => loadBaseImageMap(), /TBRL_BASE_IMAGE_MAP .* could not be read as JSON[\s\S]*Fix:/);
    } finally {
      if (saved === undefined) delete process.env.TBRL_BASE_IMAGE_MAP;
      else process.env.TBRL_BASE_IMAGE_MAP = saved;
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('Docker error mapping', () => {
  const ctx = { target: '/var/run/docker.sock', connected: false };
  it('tells an absent daemon from one that died, and recognises disk full and a vanished container', () => {
    const enoent = Object.assign(new Error('connect ENOENT /var/run/docker.sock'), { code: 'ENOENT' });
    assert.ok(mapDockerError(enoent, 'x', ctx) instanceof DockerUnavailableError);
    assert.ok(mapDockerError(Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }), 'x', { ...ctx, connected: true }) instanceof DockerDiedError);
    const full = Object.assign(new Error('(HTTP code 500) server error - write /var/lib/docker/x: no space left on device'), { statusCode: 500 });
    const disk = mapDockerError(full, 'committing a checkpoint', { ...ctx, connected: true });
    assert.ok(disk instanceof DiskFullError);
    assert.match(disk.message, /tbrl gc --all/);
    const gone = Object.assign(new Error('(HTTP code 404) no such container - No such container: abc'), { statusCode: 404, json: { message: 'No such container: abc' } });
    assert.ok(mapDockerError(gone, 'x', { ...ctx, connected: true, containerId: 'abc' }) instanceof ContainerGoneError);
    const missingFile = Object.assign(new Error('(HTTP code 404) no such container - Could not find the file /x'), { statusCode: 404, json: { message: 'Could not find the file /x in container abc' } });
    assert.ok(!(mapDockerError(missingFile, 'x', { ...ctx, connected: true, containerId: 'abc' }) instanceof ContainerGoneError));
    // Any other answer from the daemon is a typed refusal quoting the daemon, with its status kept.
    const traversal = Object.assign(new Error('(HTTP code 500) server error - invalid tar header'), { statusCode: 500, json: { message: 'error processing tar file: path escapes from parent' } });
    const refused = mapDockerError(traversal, 'copying files to /work', { ...ctx, connected: true, containerId: 'abc' });
    assert.ok(refused instanceof DockerRefusedError);
    assert.equal((refused as DockerRefusedError).code, 'DOCKER_REFUSED');
    assert.equal(statusCode(refused), 500);
    assert.match(refused.message, /refused copying files to \/work \(HTTP 500\): error processing tar file: path escapes from parent/);
  });
});
