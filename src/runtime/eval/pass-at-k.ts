/**
 * Estimators over n attempts of which c passed. Pure.
 * pass@k (Chen et al. 2021, unbiased): 1 - C(n-c, k) / C(n, k) — some of k attempts passes.
 * pass^k: C(c, k) / C(n, k) — all of k attempts pass.
 * Both are undefined (null) when n < k. Computed as products, stable for large n.
 */

export function passAtK(n: number, c: number, k: number): number | null {
  if (!(k >= 1) || n < k || c < 0 || c > n) return null;
  if (n - c < k) return 1;
  let prodFail = 1;
  for (let i = n - c + 1; i <= n; i++) prodFail *= 1 - k / i;
  return 1 - prodFail;
}

export function passHatK(n: number, c: number, k: number): number | null {
  if (!(k >= 1) || n < k || c < 0 || c > n) return null;
  if (c < k) return 0;
  let p = 1;
  for (let i = 0; i < k; i++) p *= (c - i) / (n - i);
  return p;
}

/** Default k values for n attempts: 1, 3 and n when they fit (ClawGym-style pass@1, pass@3, pass^3). */
export function defaultKs(maxAttempts: number): number[] {
  const ks = [1, 3, maxAttempts].filter((k) => k >= 1 && k <= Math.max(1, maxAttempts));
  return [...new Set(ks)].sort((a, b) => a - b);
}
