/**
 * The NIXL side channel as a real TCP listener, so that handoffs between simulated engines cross the
 * simulated network (bridges, namespaces, `tc` slow links) the way vLLM's ZMQ side channel and UCX
 * transfers cross a real fabric.
 *
 * Framing: each request is one JSON line; each reply is one JSON line, optionally followed by
 * `payload_bytes` raw bytes (the KV blocks being read). vLLM uses ZMQ + msgpack for metadata and UCX for
 * the data itself; one TCP stream carrying both keeps the simulator dependency-free while still making
 * transfer time depend on the link.
 */
import { createServer, Server, Socket, connect } from "node:net";

export type Message = Record<string, unknown>;

export interface HandlerResult {
  reply: Message;
  /** Raw bytes to stream after the reply line. */
  payloadBytes?: number;
  /** Runs once the payload has been written (P frees the blocks D has read). */
  afterPayload?: () => void;
}

export type Handler = (msg: Message) => Promise<HandlerResult>;

const CHUNK = Buffer.alloc(64 * 1024);

async function writePayload(socket: Socket, bytes: number): Promise<void> {
  let left = bytes;
  while (left > 0 && !socket.destroyed) {
    const n = Math.min(left, CHUNK.length);
    left -= n;
    if (!socket.write(n === CHUNK.length ? CHUNK : CHUNK.subarray(0, n))) {
      await new Promise<void>((resolve) => {
        const done = () => {
          socket.off("drain", done);
          socket.off("close", done);
          resolve();
        };
        socket.on("drain", done);
        socket.on("close", done);
      });
    }
  }
}

/** Binds host:port (rejecting with the listen error, e.g. EADDRINUSE) and serves `handler`. */
export function listenSideChannel(host: string, port: number, handler: Handler): Promise<Server> {
  const server = createServer((socket) => {
    let buffered = "";
    let chain = Promise.resolve();
    socket.setEncoding("utf8");
    socket.on("error", () => socket.destroy());
    socket.on("data", (data: string) => {
      buffered += data;
      let nl: number;
      while ((nl = buffered.indexOf("\n")) >= 0) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        // Requests on one connection are answered in order, like a ZMQ REQ/REP pair.
        chain = chain.then(async () => {
          let result: HandlerResult;
          try {
            result = await handler(JSON.parse(line) as Message);
          } catch (err) {
            result = { reply: { ok: false, error: `bad side-channel message: ${(err as Error).message}` } };
          }
          if (socket.destroyed) return;
          socket.write(JSON.stringify({ ...result.reply, payload_bytes: result.payloadBytes ?? 0 }) + "\n");
          if (result.payloadBytes) await writePayload(socket, result.payloadBytes);
          result.afterPayload?.();
        });
      }
    });
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen({ host, port, exclusive: true }, () => {
      server.off("error", reject);
      resolve(server);
    });
  });
}

export interface Reply {
  reply: Message;
  payloadBytes: number;
}

/** One client connection to a peer's side channel. */
export class SideChannelClient {
  private buffer: Buffer = Buffer.alloc(0);
  private waiter: (() => void) | null = null;
  private failure: Error | null = null;
  private readonly closeListeners: Array<() => void> = [];

  private constructor(private readonly socket: Socket) {
    socket.on("data", (d: Buffer) => {
      this.buffer = this.buffer.length ? Buffer.concat([this.buffer, d]) : d;
      this.waiter?.();
    });
    const fail = (err: Error) => {
      this.failure ??= err;
      this.waiter?.();
    };
    socket.on("error", fail);
    socket.on("close", () => {
      fail(new Error("side channel closed by peer"));
      for (const cb of this.closeListeners.splice(0)) cb();
    });
  }

  /**
   * Calls `cb` once when the connection closes, either end (at once if it already has): how D learns that a
   * peer's process is gone, the kernel closing its sockets as it exits.
   */
  onClose(cb: () => void): void {
    if (this.socket.destroyed) cb();
    else this.closeListeners.push(cb);
  }

  /** Connects to tcp://host:port within timeoutMs (vLLM's handshake socket uses a 5 s receive timeout). */
  static connect(host: string, port: number, timeoutMs: number): Promise<SideChannelClient> {
    return new Promise((resolve, reject) => {
      const socket = connect({ host, port });
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new Error(`timed out connecting to tcp://${host}:${port}`));
      }, timeoutMs);
      socket.once("error", (err) => {
        clearTimeout(timer);
        reject(err);
      });
      socket.once("connect", () => {
        clearTimeout(timer);
        socket.removeAllListeners("error");
        resolve(new SideChannelClient(socket));
      });
    });
  }

  /**
   * Sends one message and reads the reply line plus its payload. `idleTimeoutMs` bounds each wait for
   * more bytes, so a slow link is fine but a silent peer is not.
   */
  async request(msg: Message, idleTimeoutMs: number): Promise<Reply> {
    this.socket.write(JSON.stringify(msg) + "\n");
    let nl: number;
    while ((nl = this.buffer.indexOf(0x0a)) < 0) await this.more(idleTimeoutMs);
    const reply = JSON.parse(this.buffer.subarray(0, nl).toString("utf8")) as Message;
    this.buffer = this.buffer.subarray(nl + 1);
    const payloadBytes = typeof reply.payload_bytes === "number" ? reply.payload_bytes : 0;
    let left = payloadBytes;
    while (left > 0) {
      if (this.buffer.length === 0) await this.more(idleTimeoutMs);
      const take = Math.min(left, this.buffer.length);
      this.buffer = this.buffer.subarray(take);
      left -= take;
    }
    return { reply, payloadBytes };
  }

  private more(timeoutMs: number): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiter = null;
        reject(new Error(`no reply from side channel within ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiter = () => {
        clearTimeout(timer);
        this.waiter = null;
        if (this.failure && this.buffer.length === 0) reject(this.failure);
        else resolve();
      };
    });
  }

  close(): void {
    this.socket.destroy();
  }
}
