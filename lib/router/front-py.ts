/**
 * The router's front (lib/router/front.ts) as the Python it runs: an HTTP pass-through on the router's
 * public port to narwhal-serve on loopback, in the router's own venv (uvicorn and httpx are
 * narwhal-inference's declared dependencies, so every router host has them).
 *
 * - Every request is forwarded as it came (method, path, query, headers but hop-by-hop ones, body), and
 *   the answer streamed back as it is produced (server-sent events included), on a new connection each:
 *   a pooled connection to a router that was since stopped is never reused.
 * - While the hold file names a time still to come, a request waits (polled every 50 ms) instead of
 *   being forwarded; a request the router refused or dropped unanswered during a hold is forwarded again
 *   once it ends. The router's swap script writes the hold and signals the front (SIGUSR1: it reads the
 *   file again, so an idle front does no work), waits for `held` to echo it (every later request is then
 *   held), stops the old router and starts the new one, then removes the hold and signals again. A hold
 *   is bounded by the time it names, so a swap cut short cannot hold requests for longer.
 * - Without a hold, a router that does not accept the connection is answered 502 at once: a router that
 *   died is not hidden behind waiting clients.
 * - `GET /narwhal-fleet/front` answers the front's own state (pid, backend, hold, counts), never forwarded.
 */
export const FRONT_STATUS_PATH = "/narwhal-fleet/front";

export const FRONT_PY = String.raw`"""narwhal-fleet router front: see lib/router/front-py.ts."""
import argparse, asyncio, json, os, signal, time

import httpx
import uvicorn

POLL_S = 0.05
STATUS_PATH = "/narwhal-fleet/front"
# Hop-by-hop headers (RFC 9110 7.6.1) and the ones the forwarding connection sets itself.
REQUEST_DROP = {b"connection", b"keep-alive", b"proxy-connection", b"te", b"trailer", b"transfer-encoding", b"upgrade", b"host", b"content-length"}
RESPONSE_DROP = {b"connection", b"keep-alive", b"proxy-connection", b"te", b"trailer", b"transfer-encoding", b"upgrade"}


class Front:
    def __init__(self, backend, folder):
        self.backend = backend
        self.hold_file = os.path.join(folder, "hold")
        self.held_file = os.path.join(folder, "held")
        self.hold_until = 0.0
        self.counts = {"forwarded": 0, "held": 0, "retried": 0, "refused": 0}
        self.client = None

    def holding(self):
        return time.time() < self.hold_until

    def reread_hold(self):
        """On SIGUSR1: the swap wrote or removed the hold file."""
        try:
            with open(self.hold_file) as f:
                text = f.read().strip()
        except OSError:
            text = ""
        try:
            self.hold_until = float(text) if text else 0.0
        except ValueError:
            self.hold_until = 0.0
        if text:
            # Written only after hold_until took the value: a swap that read it back knows every
            # request from now on is held.
            with open(self.held_file + ".tmp", "w") as f:
                f.write(text)
            os.replace(self.held_file + ".tmp", self.held_file)

    async def __call__(self, scope, receive, send):
        if scope["type"] == "lifespan":
            return await self.lifespan(receive, send)
        if scope["type"] != "http":
            return
        if scope["path"] == STATUS_PATH:
            state = {"pid": os.getpid(), "backend": self.backend, "holding": self.holding(), "holdUntil": self.hold_until, **self.counts}
            return await answer(send, 200, state)
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        target = scope.get("raw_path") or scope["path"].encode()
        if scope.get("query_string"):
            target += b"?" + scope["query_string"]
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in REQUEST_DROP]
        was_held = False
        while True:
            while self.holding():
                if not was_held:
                    self.counts["held"] += 1
                    was_held = True
                await asyncio.sleep(POLL_S)
            request = self.client.build_request(scope["method"], "http://" + self.backend + target.decode("latin-1"), headers=headers, content=bytes(body))
            try:
                response = await self.client.send(request, stream=True)
                break
            except httpx.TransportError as exc:
                # Refused, or closed before reading the request: the router never took it. During a hold
                # that is the router being swapped, so it waits for the new one.
                if self.holding() and isinstance(exc, (httpx.ConnectError, httpx.RemoteProtocolError)):
                    self.counts["retried"] += 1
                    continue
                self.counts["refused"] += 1
                why = "the router behind this front (%s) gave no answer: %s" % (self.backend, exc.__class__.__name__)
                return await answer(send, 502, {"error": {"message": why, "type": "router_unavailable"}})
        self.counts["forwarded"] += 1
        # A client that hangs up closes the router's connection too, so the router cancels the request as it
        # would for the client itself (a streamed generation stops at the engine).
        gone = asyncio.ensure_future(until_disconnect(receive))
        gone.add_done_callback(lambda _: asyncio.ensure_future(response.aclose()))
        try:
            out = [(k, v) for k, v in response.headers.raw if k.lower() not in RESPONSE_DROP]
            await send({"type": "http.response.start", "status": response.status_code, "headers": out})
            async for chunk in response.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except Exception as exc:
            if not gone.done():
                # The router went away mid-answer: the client's connection ends short, as it would have.
                print("front: answer from %s cut short: %r" % (self.backend, exc), flush=True)
        finally:
            gone.cancel()
            await response.aclose()

    async def lifespan(self, receive, send):
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self.client = httpx.AsyncClient(
                    timeout=httpx.Timeout(None, connect=5.0),
                    limits=httpx.Limits(max_connections=None, max_keepalive_connections=0),
                    trust_env=False,
                )
                asyncio.get_running_loop().add_signal_handler(signal.SIGUSR1, self.reread_hold)
                self.reread_hold()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.client.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return


async def until_disconnect(receive):
    while (await receive())["type"] != "http.disconnect":
        pass


async def answer(send, status, document):
    body = json.dumps(document).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status >= 500:
        headers.append((b"retry-after", b"1"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def main():
    parser = argparse.ArgumentParser(description="narwhal-fleet router front")
    parser.add_argument("--host", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--backend", required=True, help="host:port of narwhal-serve")
    parser.add_argument("--dir", required=True, help="folder of the hold and held files")
    args = parser.parse_args()
    # Until the loop handles it (startup), a hold signal must not end the process (SIGUSR1's default).
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)
    front = Front(args.backend, args.dir)
    uvicorn.run(front, host=args.host, port=args.port, log_level="warning", access_log=False, lifespan="on")


if __name__ == "__main__":
    main()
`;
