import { createServer, type AddressInfo } from "node:net";

/**
 * A port nothing listens on: a free one, taken and let go, for "connection refused" tests.
 *
 * @example const url = `http://127.0.0.1:${await closedPort()}/v1`;
 */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
