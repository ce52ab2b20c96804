/**
 * The one seeded random source of reins (mulberry32): family generation, task order, SFT subsets
 * and the onnx engine's sampling all draw from it. Deterministic across platforms; each stream's
 * seed is derived by name in seeds.ts.
 */

/** mulberry32: small, fast, deterministic PRNG; uniform in [0, 1). */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface Rng {
  /** Uniform in [0, 1). */
  next(): number;
}

/** The same generator as an object (the sampler's shape). */
export function createRng(seed: number): Rng {
  return { next: rng(seed) };
}

/** 0..n-1 in a Fisher–Yates order drawn from `random`. */
export function shuffledIndexes(n: number, random: () => number): number[] {
  const out = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}
