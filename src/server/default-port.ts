/** Where `stet serve` listens unless told otherwise. */
export const DEFAULT_PORT = 7477;
