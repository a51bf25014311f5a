// Deterministic seeded RNG (sfc32 seeded from a 53-bit integer through splitmix32), so the
// same seed gives the same episode on every platform. Not cryptographic.

function splitmix32(state: number): () => number {
  let s = state >>> 0;
  return () => {
    s = (s + 0x9e3779b9) | 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
    return (z ^ (z >>> 16)) >>> 0;
  };
}

export class Rng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  /** seed: integer in 0..2^53-1 (both halves are used). */
  constructor(seed: number) {
    if (!Number.isSafeInteger(seed) || seed < 0) throw new RangeError(`seed must be an integer in 0..2^53-1, got ${seed}`);
    const lo = seed % 0x100000000;
    const hi = Math.floor(seed / 0x100000000);
    const mix = splitmix32(lo ^ Math.imul(hi, 0x27d4eb2d));
    this.a = mix();
    this.b = mix() ^ hi;
    this.c = mix();
    this.d = 1;
    for (let i = 0; i < 12; i++) this.nextU32();
  }

  nextU32(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  /** Uniform float in [0, 1). */
  random(): number {
    return this.nextU32() / 0x100000000;
  }

  /** Uniform integer in [lo, hi] (inclusive). */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.random() * (hi - lo + 1));
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError('pick from an empty list');
    return items[Math.floor(this.random() * items.length)] as T;
  }

  bool(p = 0.5): boolean {
    return this.random() < p;
  }
}

/** A fresh seed for unseeded resets: envs stay deterministic given the seed they report. */
export function randomSeed(): number {
  return Math.floor(Math.random() * 2 ** 53);
}
