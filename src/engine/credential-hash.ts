import { createHmac } from "node:crypto";

/**
 * A credential's keyed hash: HMAC-SHA256 of its text with the store's salt (`cache.salt()`), in
 * hex. The credential itself is never stored, and without the salt the hash cannot be checked
 * against a guess (a plain SHA-256 of a key could be). The reply cache keys replies by it, the
 * rate limits an endpoint's budget.
 *
 * @example credentialHash(await store.cache.salt(), '["sk-1",[]]') // 64 hex digits
 */
export function credentialHash(salt: string, credential: string): string {
  return createHmac("sha256", salt).update(credential).digest("hex");
}
