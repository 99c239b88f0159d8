import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils.js";
import { canonicalJson } from "./json.js";
import type { Sample } from "./types.js";

/** What identifies a sample's content: everything but its id. */
export type SampleContent = Pick<Sample, "input" | "target" | "metadata">;

/** sha256 of a string's UTF-8 bytes, as lowercase hex. */
export type Sha256Hex = (text: string) => string;

/** Hex characters of the fingerprint that make up a derived id (64 bits). */
const CONTENT_ID_LENGTH = 16;

/**
 * The portable sha256 (@noble/hashes). On Node, `node:crypto` gives identical digests several
 * times faster; hot paths outside core pass it to `fingerprintSample`.
 *
 * @example sha256Hex("abc") // "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
 */
export const sha256Hex: Sha256Hex = (text) => bytesToHex(sha256(utf8ToBytes(text)));

/**
 * sha256 (hex) of the canonical JSON of a sample's input, target and metadata. The id is left
 * out so that a renamed sample with unchanged content keeps its fingerprint, and key order
 * never matters.
 *
 * @example fingerprintSample({ input: "2+2", target: "4" }) // "ac085f1f…" (64 hex characters)
 */
export function fingerprintSample(sample: SampleContent, hash: Sha256Hex = sha256Hex): string {
  const { input, target, metadata } = sample;
  return hash(canonicalJson({ input, target, metadata }));
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
