/**
 * A small deterministic PRNG (mulberry32). Synthesis must be byte-identical per seed on every
 * machine and Node version, so nothing here touches Math.random.
 */
export class Prng {
  private state: number;

  constructor(seed: number) {
    // Mix the seed once so that nearby seeds (1, 2, 3) start far apart.
    this.state = (Math.imul(seed >>> 0 ^ 0x9e3779b9, 0x85ebca6b) ^ 0xc2b2ae35) >>> 0;
  }

  /** Uniform in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** Integer in [lo, hi] inclusive. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(0, items.length - 1)];
  }

  /** A new array in Fisher–Yates order. */
  shuffle<T>(items: readonly T[]): T[] {
    const out = [...items];
    for (let i = out.length - 1; i > 0; i--) {
      const j = this.int(0, i);
      [out[i], out[j]] = [out[j], out[i]];
    }
    return out;
  }

  /** k distinct items, in draw order. */
  sample<T>(items: readonly T[], k: number): T[] {
    return this.shuffle(items).slice(0, Math.min(k, items.length));
  }

  hex(digits: number): string {
    let s = '';
    for (let i = 0; i < digits; i++) s += this.int(0, 15).toString(16);
    return s;
  }

  /** An independent stream, so adding draws to one stage does not shift another's. */
  fork(label: string): Prng {
    let h = this.state ^ 0x811c9dc5;
    for (let i = 0; i < label.length; i++) h = Math.imul(h ^ label.charCodeAt(i), 0x01000193);
    return new Prng(h >>> 0);
  }
}
