import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils.js";
import { canonicalJson } from "./json.js";
import type { Sample } from "./types.js";

/** What identifies a sample's content: everything but its id. */
export type SampleContent = Pick<Sample, "input" | "target" | "metadata">;

/** Hex characters of the fingerprint that make up a derived id (64 bits). */
const CONTENT_ID_LENGTH = 16;

/**
 * sha256 (hex) of the canonical JSON of a sample's input, target and metadata. The id is left
 * out so that a renamed sample with unchanged content keeps its fingerprint, and key order
 * never matters.
 *
 * @example fingerprintSample({ input: "2+2", target: "4" }) // "ac085f1f…" (64 hex characters)
 */
export function fingerprintSample(sample: SampleContent): string {
  const { input, target, metadata } = sample;
  return bytesToHex(sha256(utf8ToBytes(canonicalJson({ input, target, metadata }))));
}

/**
 * A short, stable id for a sample that has none, derived from its content (never its
 * position): reordering a dataset leaves every derived id unchanged.
 *
 * @example contentId({ input: "2+2", target: "4" }) // "ac085f1f7a4e0e7a"
 */
export function contentId(sample: SampleContent): string {
  return contentIdFromFingerprint(fingerprintSample(sample));
}

/**
 * The derived id for a sample whose fingerprint is already known (saves hashing twice).
 *
 * @example contentIdFromFingerprint(fingerprintSample(sample)) === contentId(sample) // true
 */
export function contentIdFromFingerprint(fingerprint: string): string {
  return fingerprint.slice(0, CONTENT_ID_LENGTH);
}
