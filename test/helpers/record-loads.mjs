// Preloaded into a CLI child (`NODE_OPTIONS=--import …`, see loaded-modules.ts): registers a
// load hook that appends every module URL the process loads to $STET_TEST_LOAD_LOG.
import { register } from "node:module";

register("./record-loads-hook.mjs", import.meta.url);
