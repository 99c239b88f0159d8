import { createHash } from "node:crypto";
import * as z from "zod";
import type { CachePolicy, CallTarget, ModelReply } from "../core/eval.js";
import { canonicalJson, jsonSchema, type Json } from "../core/json.js";
import { withoutCredentials } from "../core/model-call-identity.js";
import type { ModelMessage } from "../core/model-types.js";
import { usageSchema } from "../core/schemas.js";
import { figuresOf } from "../core/usage.js";
import type { ReplyCacheStore } from "../store/types.js";
import { credentialHash } from "./credential-hash.js";

/** One call's place in the reply cache: its stored reply, and storing the reply it got. */
export interface CachedCall {
  get(): Promise<ModelReply | undefined>;
  put(reply: ModelReply): Promise<void>;
}

/** Replies that are never stored: a refusal or a filtered reply may not repeat when asked again. */
const NOT_CACHED = new Set<string>(["refusal", "content_filter"]);

const DAY_MS = 86_400_000;

const cachedReplySchema = z.object({
  content: z.string(),
  model: z.string(),
  toolCalls: z.array(z.object({ id: z.string(), name: z.string(), arguments: jsonSchema })),
  finishReason: z.enum(["stop", "length", "tool_calls", "content_filter", "refusal", "other"]),
  reasoning: z.string().optional(),
  message: z.object({ role: z.literal("assistant") }).loose(),
  usage: usageSchema.optional(),
});

/**
 * The reply cache of a run (an eval's `cache`): a call's reply is stored under the hash of its
 * identity with the provider and endpoint (and the epoch, `perEpoch`), and a keyed hash of its
 * credential (HMAC-SHA256 with the store's salt: the key is never stored, and a reply is never
 * served to another credential). The call's canonical text is stored beside it and compared on
 * every read, so a reply is never served for another call. The cache is an optimisation: a read
 * or write that fails is a miss, never the call's failure.
 */
export class ReplyCache {
  #salt: Promise<string> | undefined;
  readonly #store: ReplyCacheStore;
  readonly #policy: CachePolicy;
  readonly #now: () => number;

  constructor(store: ReplyCacheStore, policy: CachePolicy, now: () => number = Date.now) {
    this.#store = store;
    this.#policy = policy;
    this.#now = now;
  }

  /** The cache's view of one call: `input` is the call's journal identity (no endpoint). */
  call(input: Json, target: CallTarget, epoch: number): CachedCall {
    const request = canonicalJson({
      call: input,
      provider: target.provider,
      endpoint: withoutCredentials(target.baseURL),
      ...(this.#policy.perEpoch ? { epoch } : {}),
    });
    const callHash = createHash("sha256").update(request).digest("hex");
    const credential = async () => credentialHash(await this.#storeSalt(), target.credential);
    return {
      get: async () => {
        try {
          const found = await this.#store.get(callHash, await credential(), this.#since());
          if (!found || found.request !== request) return undefined;
          const parsed = cachedReplySchema.safeParse(found.reply);
          return parsed.success ? toReply(parsed.data) : undefined;
        } catch {
          return undefined;
        }
      },
      put: async (reply) => {
        if (NOT_CACHED.has(reply.finishReason)) return;
        const stored = reply.usage ? { ...reply, usage: figuresOf(reply.usage) } : reply;
        const entry = { callHash, request, reply: stored as unknown as Json };
        try {
          const createdAt = new Date(this.#now()).toISOString();
          await this.#store.put({ ...entry, credential: await credential(), createdAt });
        } catch {
          // A reply not stored is a later miss; the call itself succeeded.
        }
      },
    };
  }

  #storeSalt(): Promise<string> {
    this.#salt ??= this.#store.salt().catch((error: unknown) => {
      this.#salt = undefined;
      throw error;
    });
    return this.#salt;
  }

  /** The oldest entry served: `ttlDays` back, or any. */
  #since(): string {
    const { ttlDays } = this.#policy;
    return new Date(ttlDays === undefined ? 0 : this.#now() - ttlDays * DAY_MS).toISOString();
  }
}

function toReply(parsed: z.infer<typeof cachedReplySchema>): ModelReply {
  const { message, usage, reasoning, ...parts } = parsed;
  return {
    ...parts,
    // Checked to be an assistant message; its other fields are the provider's, as stored.
    message: message as unknown as ModelMessage,
    ...(reasoning === undefined ? {} : { reasoning }),
    ...(usage === undefined ? {} : { usage }),
  };
}
