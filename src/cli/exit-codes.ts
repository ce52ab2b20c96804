export const EXIT = { ok: 0, failed: 1, usage: 2, interrupted: 130 } as const;
