/**
 * Kubernetes names and label values from arbitrary run/rollout ids (pure).
 * Names are DNS-1123 labels (≤ 63, [a-z0-9-], alphanumeric at both ends) with a hash suffix, so
 * two ids that sanitize alike still get different names.
 */
import { createHash } from "node:crypto";

export const MAX_NAME = 63;
const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

export function shortHash(text: string, length = 6): string {
  return createHash("sha256").update(text).digest("hex").slice(0, length);
}

export function isDnsLabel(name: string): boolean {
  return name.length <= MAX_NAME && DNS1123_LABEL.test(name);
}

export function isLabelValue(value: string): boolean {
  return value.length <= 63 && LABEL_VALUE.test(value);
}

function sanitize(part: string): string {
  return part
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, "-")
    .replace(/-+/g, "-")
    .replace(/^-+|-+$/g, "");
}

/**
 * A DNS-1123 label from parts, e.g. ["reins", runId, rolloutId] → "reins-run-1-0-0-0-3fa9c1".
 * The hash covers the raw parts; the readable prefix is cut to fit.
 */
export function dnsName(parts: string[], maxLength = MAX_NAME): string {
  const hash = shortHash(parts.join("\u0000"));
  const readable = parts
    .map(sanitize)
    .filter((p) => p.length > 0)
    .join("-");
  const room = maxLength - hash.length - 1;
  let prefix = readable.slice(0, room).replace(/-+$/g, "");
  if (prefix.length === 0 || !/^[a-z0-9]/.test(prefix)) prefix = `r${prefix}`.slice(0, room).replace(/-+$/g, "");
  return `${prefix}-${hash}`;
}

/** A label value: the value itself when valid, else a sanitized prefix plus a hash. */
export function labelValue(value: string): string {
  if (isLabelValue(value)) return value;
  const hash = shortHash(value);
  const cleaned = value
    .replace(/[^A-Za-z0-9_.-]+/g, "-")
    .replace(/^[^A-Za-z0-9]+/, "")
    .slice(0, 63 - hash.length - 1)
    .replace(/[^A-Za-z0-9]+$/, "");
  return cleaned ? `${cleaned}-${hash}` : hash;
}
