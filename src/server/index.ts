/** `stet/server`: the HTTP API as a Hono app factory, and the entry that binds it. */
export { createApp } from "./create-app.js";
export type { AppOptions } from "./create-app.js";
export { listen } from "./serve.js";
export { recoverOrphans } from "../engine/recover-orphans.js";
