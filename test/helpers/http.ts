import { request as httpRequest, type ClientRequest, type IncomingMessage } from "node:http";
import { connect, type Socket } from "node:net";

/** A whole answer read by `httpRaw`. */
export interface RawResponse {
  status: number;
  headers: IncomingMessage["headers"];
  text: string;
  json: () => Record<string, unknown>;
}

export interface RawRequest {
  method?: string;
  /** Sent as they are, `host` included (fetch would not let a test pick the Host). */
  headers?: Record<string, string>;
  /** Written, then the request ends. A function writes the body itself (chunked, slowly, …). */
  body?: string | Buffer | ((req: ClientRequest) => void);
  /** The client's own address, e.g. 127.0.0.2, to be another client of a loopback server. */
  localAddress?: string;
}

/**
 * One request over node:http with full control of its headers and body; resolves with the
 * answer as soon as it is complete, even if the server answered before the body was all sent.
 *
 * @example const res = await httpRaw(`${url}/api/runs`, { headers: { host: "evil.example" } });
 */
export function httpRaw(url: string, options: RawRequest = {}): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, {
      method: options.method ?? "GET",
      headers: options.headers ?? {},
      ...(options.localAddress ? { localAddress: options.localAddress } : {}),
    });
    let answered = false;
    req.on("response", (res) => {
      answered = true;
      let text = "";
      res.setEncoding("utf8").on("data", (d: string) => (text += d));
      res.on("end", () => {
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          text,
          json: () => JSON.parse(text) as Record<string, unknown>,
        });
        req.destroy();
      });
    });
    // A server that refuses a body may close the connection while it is still being sent.
    req.on("error", (error) => {
      if (!answered) reject(error);
    });
    const { body } = options;
    if (typeof body === "function") body(req);
    else req.end(body);
  });
}

/**
 * Opens an SSE stream over node:http and resolves once its headers arrived (or with the refusal),
 * leaving the stream open: `close()` destroys the socket, as a client that goes away does.
 *
 * @example const s = await openStream(`${url}/api/runs/r_1/events`); s.close();
 */
export function openStream(
  url: string,
  options: Pick<RawRequest, "method" | "headers" | "body"> = {},
): Promise<{ status: number; received: () => string; close: () => void; ended: Promise<void> }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: options.method ?? "GET", headers: options.headers });
    req.on("response", (res) => {
      let text = "";
      res.setEncoding("utf8").on("data", (d: string) => (text += d));
      const ended = new Promise<void>((done) => res.on("close", done));
      resolve({
        status: res.statusCode ?? 0,
        received: () => text,
        close: () => req.destroy(),
        ended,
      });
    });
    req.on("error", reject);
    req.end(typeof options.body === "function" ? undefined : options.body);
  });
}

/**
 * A raw TCP connection to `url`'s host and port: what a slow or idle client holds open. `closed`
 * resolves when the connection is gone, whoever closed it.
 *
 * @example const { socket, closed } = await rawSocket(url); socket.write("GET / HTTP/1.1\r\n");
 */
export function rawSocket(url: string): Promise<{ socket: Socket; closed: Promise<void> }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname.replace(/^\[|\]$/g, ""));
    const closed = new Promise<void>((done) => socket.on("close", () => done()));
    socket.once("connect", () => {
      socket.on("error", () => {});
      resolve({ socket, closed });
    });
    socket.once("error", reject);
  });
}
