/**
 * The exec status an API server sends on channel 3 of the exec websocket (a metav1.Status), read
 * as an exit code (pure). Success → 0; NonZeroExitCode → the code in details.causes[ExitCode];
 * anything else is a failure of the exec machinery, not of the command.
 */

export interface ExecStatus {
  status?: string;
  message?: string;
  reason?: string;
  details?: { causes?: { reason?: string; message?: string }[] };
}

export type ExecOutcome = { exitCode: number } | { error: string };

export function outcomeOfStatus(status: ExecStatus): ExecOutcome {
  if (status.status === "Success") return { exitCode: 0 };
  if (status.reason === "NonZeroExitCode") {
    const cause = status.details?.causes?.find((c) => c.reason === "ExitCode");
    const code = Number(cause?.message);
    if (Number.isInteger(code)) return { exitCode: code };
  }
  return { error: status.message ?? status.reason ?? "exec failed" };
}

/** Channel numbers of the k8s streaming protocol (v4/v5.channel.k8s.io). */
export const CHANNEL = { stdin: 0, stdout: 1, stderr: 2, status: 3, resize: 4, close: 255 } as const;

/** A frame of the channel protocol: one channel byte, then the payload. */
export function encodeChannelFrame(channel: number, payload: Uint8Array | string): Buffer {
  const body = typeof payload === "string" ? Buffer.from(payload, "utf8") : Buffer.from(payload);
  return Buffer.concat([Buffer.from([channel]), body]);
}

export function decodeChannelFrame(frame: Buffer): { channel: number; payload: Buffer } {
  return { channel: frame[0], payload: frame.subarray(1) };
}
