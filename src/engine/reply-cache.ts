import { createHash } from "node:crypto";
import * as z from "zod";
import type { CachePolicy, ModelReply, TargetOf } from "../core/eval.js";
import { canonicalJson, jsonSchema, type Json } from "../core/json.js";
import { withoutCredentials } from "../core/model-call-identity.js";
import type { ModelMessage } from "../core/model-types.js";
import { usageSchema } from "../core/schemas.js";
import type { Usage } from "../core/types.js";
import { figuresOf } from "../core/usage.js";
import type { ReplyCacheStore } from "../store/types.js";
import { credentialHash } from "./credential-hash.js";

/** One call's place in the reply cache: its stored reply, and storing the reply it got. */
export interface CachedCall {
  get(): Promise<ModelReply | undefined>;
  put(reply: ModelReply): Promise<void>;
}

/** A call's place in the store, once its target is known; undefined: the call is not cached. */
type Place = Promise<{ request: string; callHash: string; credential: string } | undefined>;

/** One AI SDK model call's place in the reply cache (see ReplyCache.result). */
export interface CachedResult {
  get(): Promise<{ result: Json; usage?: Usage } | undefined>;
  put(done: { result: Json; usage?: Usage | undefined }): Promise<void>;
}

/** Replies that are never stored: a refusal or a filtered reply may not repeat when asked again. */
const NOT_CACHED = new Set<string>(["refusal", "content_filter"]);

/** An AI SDK call's finish reasons that are never stored (its stream's error parts neither). */
const NOT_CACHED_RESULTS = new Set<string>(["content-filter", "error"]);

const cachedResultSchema = z.strictObject({ result: jsonSchema, usage: usageSchema.optional() });

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

  /**
   * The cache's view of one call: `input` is the call's journal identity (no endpoint); a
   * target that comes to nothing (an AI SDK model whose endpoint or key stet cannot read) is a
   * call never served nor stored.
   */
  call(input: Json, target: TargetOf, epoch: number): CachedCall {
    const place = this.#place({ call: input }, target, epoch);
    return {
      get: () =>
        this.#read(place, (stored) => {
          const parsed = cachedReplySchema.safeParse(stored);
          return parsed.success ? toReply(parsed.data) : undefined;
        }),
      put: async (reply) => {
        if (NOT_CACHED.has(reply.finishReason)) return;
        await this.#write(place, reply.usage ? { ...reply, usage: figuresOf(reply.usage) } : reply);
      },
    };
  }

  /**
   * The cache's view of one call of an AI SDK model (`ctx.languageModel`): `name` is its journal
   * step's (`ai-sdk.generate`, `ai-sdk.stream`), `input` its identity, and what is stored is the
   * result the journal records (a generate call's result, a stream's parts) with its usage. A
   * result filtered or ended in error (its finish reason, a stream's error part) is not stored.
   */
  result(name: string, input: Json, target: TargetOf, epoch: number): CachedResult {
    const place = this.#place({ call: input, step: name }, target, epoch);
    return {
      get: () =>
        this.#read(place, (stored) => {
          const parsed = cachedResultSchema.safeParse(stored);
          if (!parsed.success) return undefined;
          const { result, usage } = parsed.data;
          return usage === undefined ? { result } : { result, usage };
        }),
      put: async ({ result, usage }) => {
        if (finishReasons(result).some((reason) => NOT_CACHED_RESULTS.has(reason))) return;
        await this.#write(
          place,
          usage === undefined ? { result } : { result, usage: figuresOf(usage) },
        );
      },
    };
  }

  /** The reply stored at `place` for the same request text, as `read` takes it; a failure is a miss. */
  async #read<T>(place: Place, read: (stored: Json) => T | undefined): Promise<T | undefined> {
    try {
      const at = await place;
      if (!at) return undefined;
      const found = await this.#store.get(at.callHash, at.credential, this.#since());
      return found && found.request === at.request ? read(found.reply) : undefined;
    } catch {
      return undefined;
    }
  }

  /** Stores `reply` at `place`; one not stored is a later miss, the call itself succeeded. */
  async #write(place: Place, reply: object): Promise<void> {
    try {
      const at = await place;
      if (!at) return;
      const createdAt = new Date(this.#now()).toISOString();
      await this.#store.put({ ...at, reply: reply as unknown as Json, createdAt });
    } catch {
      // Not stored: asked again next time.
    }
  }

  /**
   * Where a call's reply is stored: its request text and hash, and the credential's keyed hash.
   * Read by #read and #write, which take its failure as a miss: never an unhandled rejection.
   */
  #place(call: Record<string, Json>, target: TargetOf, epoch: number): Place {
    const place = this.#placeOf(call, target, epoch);
    place.catch(() => {});
    return place;
  }

  async #placeOf(call: Record<string, Json>, target: TargetOf, epoch: number) {
    const known = await target;
    if (!known) return undefined;
    const request = canonicalJson({
      ...call,
      provider: known.provider,
      endpoint: withoutCredentials(known.baseURL),
      ...(this.#policy.perEpoch ? { epoch } : {}),
    });
    const callHash = createHash("sha256").update(request).digest("hex");
    const credential = credentialHash(await this.#storeSalt(), known.credential);
    return { request, callHash, credential };
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

/**
 * An AI SDK call's finish reasons as the journal records its result: a generate call's
 * `finishReason`, a stream's `finish` parts', and `error` for a stream's error part (a reason
 * given as `{ unified }`, as newer specifications do, is read by it).
 */
function finishReasons(result: Json): string[] {
  const reasons: string[] = [];
  const read = (reason: unknown) => {
    const text =
      typeof reason === "object" && reason !== null
        ? (reason as { unified?: unknown }).unified
        : reason;
    if (typeof text === "string") reasons.push(text);
  };
  if (typeof result !== "object" || result === null || Array.isArray(result)) return reasons;
  read(result.finishReason);
  if (Array.isArray(result.parts)) {
    for (const part of result.parts) {
      if (typeof part !== "object" || part === null || Array.isArray(part)) continue;
      if (part.type === "error") reasons.push("error");
      if (part.type === "finish") read(part.finishReason);
    }
  }
  return reasons;
}
