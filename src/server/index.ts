/** `stet/server`: the HTTP API as a Hono app factory, and `serve`, which binds it over a store. */
export { createApp } from "./create-app.js";
export type { AppOptions } from "./create-app.js";
export { checkServeOptions, serve } from "./serve.js";
export type { ServeOptions, Serving } from "./serve.js";
export { listen } from "./listen.js";
export { createRedactor, secretsFromEnv } from "./redact.js";
export { recoverOrphans } from "../runs/recover-orphans.js";
