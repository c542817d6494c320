/**
 * One plain HTTP GET carried by a TCP stream the SSH host opens (ssh -W): the request leaves from the host's
 * own network position, so an address only the host reaches (an engine bound to its fabric address) is
 * read without a listener on this machine. The whole exchange, the stream's opening included, is bounded
 * by one named timeout.
 */
import type { Duplex } from "node:stream";
import type { SshSession } from "./client";
import { SshError } from "./errors";

export interface ForwardedReply {
  status: number;
  text: string;
}

/** More than any `/metrics` page: an answer that long is not the service asked for. */
const REPLY_LIMIT_BYTES = 8 * 1024 * 1024;

/**
 * GETs `path` from `host:port` through `session`'s host. Rejects with an SshError naming the host, `name`
 * and `timeoutName` when no whole answer came within `timeoutS`, or with what failed (the forward, the
 * connection, the answer).
 */
export function forwardedGet(session: SshSession, target: { host: string; port: number; path: string }, o: { timeoutS: number; timeoutName: string; name: string }): Promise<ForwardedReply> {
  const http = require("node:http") as typeof import("node:http");
  const hostHeader = `${target.host.includes(":") ? `[${target.host}]` : target.host}:${target.port}`;
  const failed = (code: SshError["code"], why: string) => new SshError(code, `host ${session.target.alias}: ${o.name}: ${why}`);
  return new Promise((resolve, reject) => {
    let done = false;
    let stream: Duplex | undefined;
    const finish = (err: Error | null, reply?: ForwardedReply) => {
      if (done) return;
      done = true;
      clearTimeout(deadline);
      stream?.destroy();
      if (err) reject(err);
      else resolve(reply!);
    };
    const deadline = setTimeout(() => finish(failed("NARWHAL_SSH_TIMEOUT", `no whole answer within ${o.timeoutName}=${o.timeoutS}s`)), o.timeoutS * 1000);
    session.openTcp(target.host, target.port).then(
      (sock) => {
        // The channel ssh2 returns is a duplex stream; one opened after the deadline is closed at once.
        stream = sock as unknown as Duplex;
        if (done) return void stream.destroy();
        const req = http.request({ method: "GET", path: target.path, headers: { host: hostHeader, accept: "text/plain, */*", connection: "close" }, createConnection: () => stream });
        req.on("error", (err) => finish(failed("NARWHAL_SSH_CONNECT", err.message)));
        req.on("response", (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on("data", (c: Buffer) => {
            size += c.length;
            if (size > REPLY_LIMIT_BYTES) finish(failed("NARWHAL_SSH_EXEC", `the answer exceeds ${REPLY_LIMIT_BYTES} bytes`));
            else chunks.push(c);
          });
          res.on("error", (err) => finish(failed("NARWHAL_SSH_LOST", err.message)));
          res.on("end", () => finish(null, { status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") }));
        });
        req.end();
      },
      // The forward's own refusal names the host and the address already.
      (err: Error) => finish(err),
    );
  });
}
