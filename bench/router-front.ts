/**
 * What the router's front (lib/router/front-py.ts) costs a request: the same requests sent straight to a
 * backend (the floor) and through the front, in alternating rounds. The backend is a Node HTTP server in
 * its own process that answers a small JSON body at once, so the figures are the front's own: one more
 * loopback connection and one more Python hop.
 *
 *   npm run bench:router-front -- [--rounds 5] [--requests 400] [--clients 16] [--seconds 3]
 *
 * Prints one JSON object: per path, the median over rounds of the median and p99 latency of sequential
 * requests, of the requests per second that `--clients` concurrent clients reach, and (through the front)
 * the front's CPU milliseconds per request.
 */
import { spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { FRONT_PY, FRONT_STATUS_PATH } from "../lib/router/front-py";

const ROOT = path.resolve(__dirname, "..");
const PYTHON = path.join(ROOT, ".tools", "venv", "bin", "python");

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * q))];

/** CPU ticks (user + system) a process has used, from /proc. */
function cpuTicks(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return Number(fields[11]) + Number(fields[12]);
}

async function waitFor(url: string, what: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!(await fetch(url).then((r) => r.status < 500, () => false))) {
    if (Date.now() > deadline) throw new Error(`${what} did not answer ${url} within 30 s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function freePort(): Promise<number> {
  const net = await import("node:net");
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

const BODY = JSON.stringify({ model: "tiny", prompt: "A narwhal is", max_tokens: 4 });
const send = (base: string) => fetch(`${base}/v1/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: BODY }).then((r) => r.text());

async function sequential(base: string, requests: number): Promise<number[]> {
  const ms: number[] = [];
  for (let i = 0; i < requests; i++) {
    const t0 = performance.now();
    await send(base);
    ms.push(performance.now() - t0);
  }
  return ms;
}

async function concurrent(base: string, clients: number, seconds: number): Promise<number> {
  const end = Date.now() + seconds * 1000;
  let done = 0;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (Date.now() < end) {
        await send(base);
        done++;
      }
    }),
  );
  return done / seconds;
}

async function main(): Promise<void> {
  const rounds = arg("rounds", 5);
  const requests = arg("requests", 400);
  const clients = arg("clients", 16);
  const seconds = arg("seconds", 3);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "bench-front-"));
  const [backendPort, frontPort] = [await freePort(), await freePort()];
  const children: ChildProcess[] = [];
  try {
    const backendJs = `require("node:http").createServer((q, s) => { q.resume(); q.on("end", () => { s.writeHead(200, { "content-type": "application/json" }); s.end('{"choices":[{"text":" a whale"}]}'); }); }).listen(${backendPort}, "127.0.0.1");`;
    children.push(spawn(process.execPath, ["-e", backendJs], { stdio: "ignore" }));
    fs.writeFileSync(path.join(dir, "front.py"), FRONT_PY);
    const front = spawn(PYTHON, [path.join(dir, "front.py"), "--host", "127.0.0.1", "--port", String(frontPort), "--backend", `127.0.0.1:${backendPort}`, "--dir", dir], { stdio: "ignore" });
    children.push(front);
    const direct = `http://127.0.0.1:${backendPort}`;
    const viaFront = `http://127.0.0.1:${frontPort}`;
    await waitFor(direct, "the backend");
    await waitFor(`${viaFront}${FRONT_STATUS_PATH}`, "the front");

    const figures = { direct: [] as Array<Record<string, number>>, front: [] as Array<Record<string, number>> };
    for (let round = 0; round < rounds; round++) {
      // Alternate which path goes first, so neither always meets a warmer machine.
      const order: Array<["direct" | "front", string]> = round % 2 === 0 ? [["direct", direct], ["front", viaFront]] : [["front", viaFront], ["direct", direct]];
      for (const [name, base] of order) {
        const ticks0 = cpuTicks(front.pid!);
        const latency = await sequential(base, requests);
        const perSecond = await concurrent(base, clients, seconds);
        const frontCpuMs = ((cpuTicks(front.pid!) - ticks0) * 1000) / 100;
        const sent = requests + perSecond * seconds;
        figures[name].push({
          medianMs: median(latency),
          p99Ms: quantile(latency, 0.99),
          requestsPerSecond: perSecond,
          ...(name === "front" ? { frontCpuMsPerRequest: frontCpuMs / sent } : {}),
        });
      }
    }
    const summary = (rows: Array<Record<string, number>>) => Object.fromEntries(Object.keys(rows[0]).map((k) => [k, Number(median(rows.map((r) => r[k])).toFixed(3))]));
    const d = summary(figures.direct);
    const f = summary(figures.front);
    console.log(
      JSON.stringify(
        {
          rounds,
          requests,
          clients,
          seconds,
          cpus: os.cpus().length,
          direct: d,
          front: f,
          addedMedianMs: Number((f.medianMs - d.medianMs).toFixed(3)),
          throughputRatio: Number((f.requestsPerSecond / d.requestsPerSecond).toFixed(3)),
        },
        null,
        2,
      ),
    );
  } finally {
    for (const c of children) c.kill();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e: Error) => {
  console.error(`bench router-front: ${e.message}`);
  process.exit(1);
});
