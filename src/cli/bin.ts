import { main } from "./main.js";

const code = await main(process.argv.slice(2));
// Solvers may leave keep-alive sockets or timers behind; the run is recorded, so leave promptly.
process.exit(code);
