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
  return hash(canonicalContent(sample));
}

/**
 * `canonicalJson({ input, target, metadata })`, written member by member: loading a million
 * samples then builds no sorted copy of each one's content object. The members are in the order
 * that call sorts them (input, metadata, target); each member's text is its own canonical JSON,
 * as `JSON.stringify` writes a nested value; an undefined one is left out, as that call leaves
 * it out. A member whose canonical JSON is no text (a function) goes that call's way, which
 * defines the bytes.
 */
function canonicalContent(sample: SampleContent): string {
  const { input, target, metadata } = sample;
  const members = [memberJson(input), memberJson(metadata), memberJson(target)] as const;
  if (members.includes(null)) return canonicalJson({ input, target, metadata });
  let text = "{";
  let separator = "";
  for (let at = 0; at < 3; at += 1) {
    if (members[at] === undefined) continue;
    text += `${separator}"${MEMBER_NAMES[at]}":${members[at]}`;
    separator = ",";
  }
  return `${text}}`;
}

/** The content's members in the order `canonicalJson` sorts them. */
const MEMBER_NAMES = ["input", "metadata", "target"] as const;

/** A member's canonical JSON: undefined when the member is absent, null when it has none (a function). */
function memberJson(value: unknown): string | undefined | null {
  if (value === undefined) return undefined;
  return (canonicalJson(value) as string | undefined) ?? null;
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
