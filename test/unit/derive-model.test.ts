import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

// scripts/derive-model.mjs on a small GGUF built here: the header is kept
// byte for byte except general.file_type, the Q4_1 tensor becomes Q8_0 holding the same values to
// within half a Q8_0 step, the F32 tensor is untouched, offsets stay aligned.

type Derive = (input: Buffer, target?: string) => { bytes: Buffer; converted: number };
const load = async (): Promise<Derive> =>
  ((await import(pathToFileURL(join(__dirname, '..', '..', 'scripts', 'derive-model.mjs')).href)) as { derive: Derive }).derive;

const u32 = (v: number) => { const b = Buffer.alloc(4); b.writeUInt32LE(v); return b; };
const u64 = (v: number) => { const b = Buffer.alloc(8); b.writeBigUInt64LE(BigInt(v)); return b; };
const str = (s: string) => Buffer.concat([u64(Buffer.byteLength(s)), Buffer.from(s)]);
const align = (n: number) => Math.ceil(n / 32) * 32;

function half(v: number): number {
  // Exact for the values used here (small integers and powers of two).
  const f = new Float32Array([v]);
  const x = new Uint32Array(f.buffer)[0];
  if (v === 0) return 0;
  return ((x >>> 16) & 0x8000) | ((((x >>> 23) & 0xff) - 112) << 10) | ((x & 0x7fffff) >>> 13);
}
function fromHalf(h: number): number {
  const e = (h >> 10) & 0x1f;
  const m = h & 0x3ff;
  const s = h & 0x8000 ? -1 : 1;
  return e === 0 ? s * m * 2 ** -24 : s * (1 + m / 1024) * 2 ** (e - 15);
}

/** A GGUF with metadata (a string, the file type, a string array), a 64x2 Q4_1 tensor and a 3-element F32 tensor. */
function sampleGguf(): { file: Buffer; values: number[]; steps: number[]; norms: Buffer } {
  const kv = Buffer.concat([
    str('general.architecture'), u32(8), str('llama'),
    str('general.file_type'), u32(4), u32(3),
    str('tokenizer.ggml.tokens'), u32(9), u32(8), u64(2), str('<s>'), str('hello'),
  ]);
  const blocks: Buffer[] = [];
  const values: number[] = [];
  const steps: number[] = [];
  for (let b = 0; b < 4; b++) {
    const d = 0.25 * (b + 1);
    const m = -2 + b;
    const qs = Buffer.alloc(16);
    const q = Array.from({ length: 32 }, (_, j) => (j * 7 + b * 3) % 16);
    for (let j = 0; j < 16; j++) qs[j] = q[j] | (q[j + 16] << 4);
    const block = Buffer.alloc(4);
    block.writeUInt16LE(half(d), 0);
    block.writeUInt16LE(half(m), 2);
    blocks.push(block, qs);
    values.push(...q.map((x) => x * d + m));
    steps.push(d);
  }
  const weights = Buffer.concat(blocks);
  const norms = Buffer.from(new Float32Array([1, -0.5, 3]).buffer);
  const infos = Buffer.concat([
    str('blk.0.w'), u32(2), u64(64), u64(2), u32(3), u64(0),
    str('blk.0.norm'), u32(1), u64(3), u32(0), u64(align(weights.length)),
  ]);
  const head = Buffer.concat([Buffer.from('GGUF'), u32(3), u64(2), u64(3), kv, infos]);
  const file = Buffer.concat([head, Buffer.alloc(align(head.length) - head.length), weights, Buffer.alloc(align(weights.length) - weights.length), norms]);
  return { file, values, steps, norms };
}

test('derive-model: Q4_1 → Q8_0 keeps the metadata and every other tensor, and the values to within half a Q8_0 step', async () => {
  const derive = await load();
  const { file, values, steps, norms } = sampleGguf();
  const { bytes, converted } = derive(file, 'Q8_0');
  assert.equal(converted, 1);
  // The metadata section is the same bytes but for the file type (3 = MOSTLY_Q4_1 → 7 = MOSTLY_Q8_0).
  const kvStart = 4 + 4 + 8 + 8;
  const typeAt = file.indexOf(Buffer.concat([str('general.file_type'), u32(4)])) + 8 + 'general.file_type'.length + 4;
  assert.equal(bytes.readUInt32LE(typeAt), 7);
  assert.deepEqual(bytes.subarray(kvStart, typeAt), file.subarray(kvStart, typeAt));
  const tokensAt = file.indexOf(str('tokenizer.ggml.tokens'));
  assert.ok(tokensAt > 0 && bytes.subarray(tokensAt, tokensAt + 60).equals(file.subarray(tokensAt, tokensAt + 60)));
  // Tensor infos: the first tensor now has type 8 (Q8_0); the second starts at the aligned end of 4 blocks of 34 bytes.
  const info1 = bytes.indexOf(str('blk.0.w'));
  assert.equal(bytes.readUInt32LE(info1 + 8 + 7 + 4 + 16), 8);
  const info2 = bytes.indexOf(str('blk.0.norm'));
  const off2 = Number(bytes.readBigUInt64LE(info2 + 8 + 10 + 4 + 8 + 4));
  assert.equal(bytes.readUInt32LE(info2 + 8 + 10 + 4 + 8), 0, 'the F32 tensor keeps its type');
  assert.equal(off2, align(4 * 34));
  const dataStart = align(info2 + 8 + 10 + 4 + 8 + 4 + 8);
  assert.deepEqual(bytes.subarray(dataStart + off2, dataStart + off2 + 12), norms, 'the F32 tensor is copied unchanged');
  for (let b = 0; b < 4; b++) {
    const o = dataStart + b * 34;
    const d = fromHalf(bytes.readUInt16LE(o));
    // Half a Q8_0 step (max|x|/127) plus the scale's own f16 rounding; far below a Q4_1 step (the
    // real model's worst element is 5.4% of its block's Q4_1 step).
    const block = values.slice(b * 32, b * 32 + 32);
    const amax = Math.max(...block.map(Math.abs));
    const bound = amax / 254 + amax / 2048;
    for (let j = 0; j < 32; j++) {
      const got = bytes.readInt8(o + 2 + j) * d;
      assert.ok(Math.abs(got - block[j]) <= bound, `block ${b} element ${j}: ${got} vs ${block[j]}`);
      assert.ok(Math.abs(got - block[j]) <= 0.1 * steps[b], `block ${b} element ${j}: off by more than a tenth of a Q4_1 step`);
    }
  }
  // Deterministic (the README records the derived file's sha256).
  assert.ok(derive(file, 'Q8_0').bytes.equals(bytes));
});

test('derive-model: Q4_0 target, and inputs it must refuse', async () => {
  const derive = await load();
  const { file } = sampleGguf();
  const q40 = derive(file, 'Q4_0').bytes;
  const info1 = q40.indexOf(str('blk.0.w'));
  assert.equal(q40.readUInt32LE(info1 + 8 + 7 + 4 + 16), 2);
  assert.throws(() => derive(file, 'Q5_K'), /unknown target Q5_K/);
  assert.throws(() => derive(Buffer.from('NOPE0000')), /not a GGUF file/);
  const noQ41 = derive(file, 'Q8_0').bytes;
  assert.throws(() => derive(noQ41, 'Q8_0'), /no Q4_1 tensor/);
});
