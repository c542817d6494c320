/**
 * The evidence report in a real browser: Debian's Chromium, headless, opens the page from disk. Every
 * HTTP request Chromium makes is sent to a proxy on loopback that counts them, so "no network fetch" is
 * observed, not assumed; a canary page proves the proxy would have seen one.
 */
import { expect } from "chai";
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { pathToFileURL } from "node:url";
import { EvidenceStore } from "../../lib/evidence/store";
import { collectReport } from "../../lib/report/html/collect";
import { CONTENT_SECURITY_POLICY, renderReport } from "../../lib/report/html/page";
import { chartOf, elements, FIXTURE_STACK, FIXTURE_STORE, recordsOf, stored } from "../fixtures/report/page";

/** One Chromium run (start, load from disk, render, exit): a stuck browser fails the test instead of hanging it. */
const CHROMIUM_TIMEOUT_MS = 90_000;
const WINDOW = { width: 1280, height: 2400 };

interface Run {
  readonly stdout: string;
  readonly stderr: string;
}

function chromium(dir: string, proxyPort: number, args: string[]): Promise<Run> {
  const flags = [
    "--headless",
    "--disable-gpu",
    "--no-sandbox",
    `--user-data-dir=${path.join(dir, "profile")}`,
    // Everything Chromium would fetch goes to the counting proxy; it has no reason to fetch anything.
    `--proxy-server=http://127.0.0.1:${proxyPort}`,
    "--proxy-bypass-list=<-loopback>",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    ...args,
  ];
  return new Promise((resolve, reject) => {
    execFile("chromium", flags, { timeout: CHROMIUM_TIMEOUT_MS, killSignal: "SIGKILL", maxBuffer: 64 * 1024 * 1024, cwd: dir }, (error, stdout, stderr) => {
      if (error) reject(new Error(`chromium ${args.join(" ")} failed (${(error as NodeJS.ErrnoException).code ?? error.message}); is Debian's chromium installed (scripts/setup.sh)?\n${stderr.slice(-2000)}`));
      else resolve({ stdout, stderr });
    });
  });
}

/**
 * Chromium's own services (component updates, network time, sign-in) call home whatever page is open,
 * even with background networking disabled; they are not the page's fetches and are left out. The page
 * names no host at all, so anything else the proxy sees came from it.
 */
const BROWSER_SERVICE = /^(?:CONNECT |[A-Z]+ https?:\/\/)[^/:]*\.(?:google\.com|googleapis\.com|gvt1\.com|gstatic\.com)(?:[:/]|$)/;
const pageFetches = (seen: readonly string[]) => seen.filter((s) => !BROWSER_SERVICE.test(s));

/** A proxy that answers every request with 404 and remembers what was asked. */
function countingProxy(): Promise<{ port: number; seen: string[]; close: () => Promise<void> }> {
  const seen: string[] = [];
  const server = http.createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    res.writeHead(404).end();
  });
  server.on("connect", (req, socket) => {
    seen.push(`CONNECT ${req.url}`);
    // Chromium may reset a refused tunnel before the answer is out: that is no failure of the page.
    socket.on("error", () => undefined);
    socket.end("HTTP/1.1 403 Forbidden\r\n\r\n");
  });
  server.on("clientError", (_err, socket) => socket.destroy());
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () =>
      resolve({ port: (server.address() as AddressInfo).port, seen, close: () => new Promise<void>((r) => server.close(() => r())) }),
    ),
  );
}

describe("evidence report: rendered by headless Chromium from disk", function () {
  this.timeout(4 * CHROMIUM_TIMEOUT_MS);
  let dir: string;
  let page: string;
  let proxy: Awaited<ReturnType<typeof countingProxy>>;

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "report-render-"));
    page = path.join(dir, "report.html");
    fs.writeFileSync(page, renderReport(await collectReport(new EvidenceStore(FIXTURE_STORE), { stack: FIXTURE_STACK })));
    proxy = await countingProxy();
  });
  after(async () => {
    await proxy?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("would see a fetch: a page without the report's policy that loads an image reaches the proxy", async () => {
    const canary = path.join(dir, "canary.html");
    fs.writeFileSync(canary, `<!DOCTYPE html><html><body><img src="http://report-canary.invalid/pixel.png"></body></html>`);
    const before = proxy.seen.length;
    await chromium(dir, proxy.port, ["--dump-dom", pathToFileURL(canary).href]);
    expect(pageFetches(proxy.seen.slice(before))).to.deep.equal(["GET http://report-canary.invalid/pixel.png"]);
  });

  it("keeps the same fetch from happening under the report's Content-Security-Policy", async () => {
    const blocked = path.join(dir, "blocked.html");
    fs.writeFileSync(blocked, `<!DOCTYPE html><html><head><meta http-equiv="Content-Security-Policy" content="${CONTENT_SECURITY_POLICY}"></head><body><img src="http://report-canary.invalid/blocked.png"><p id="still-here">text</p></body></html>`);
    const before = proxy.seen.length;
    const { stdout } = await chromium(dir, proxy.port, ["--dump-dom", pathToFileURL(blocked).href]);
    expect(stdout).to.include(`<p id="still-here">text</p>`);
    expect(pageFetches(proxy.seen.slice(before))).to.deep.equal([]);
  });

  it("renders the report's charts with the stored numbers, and fetches nothing", async () => {
    const before = proxy.seen.length;
    const { stdout: dom } = await chromium(dir, proxy.port, ["--dump-dom", pathToFileURL(page).href]);
    expect(pageFetches(proxy.seen.slice(before))).to.deep.equal([]);
    expect(dom).to.include(`<title>Evidence report: stack ${FIXTURE_STACK}</title>`);
    for (const { record } of recordsOf("profile")) {
      const engine = record.subject.alias as string;
      const samples = stored(record.artifacts[0].relativePath);
      for (const [kind, cls, want] of [
        ["prefill", "sample", samples.prefill],
        ["decode", "decode-point", samples.decode.map((d: number[]) => [d[1], d[2]])],
      ] as const) {
        const c = chartOf(dom, kind, engine);
        const points = elements(c.body, "circle", cls);
        expect(points.map((p) => [Number(p.attrs["data-x"]), Number(p.attrs["data-y"])]), `${engine} ${kind}`).to.deep.equal(want);
        for (const p of points) {
          const [x, y] = c.value(Number(p.attrs.cx), Number(p.attrs.cy));
          expect(x).to.be.closeTo(Number(p.attrs["data-x"]), c.tolerance[0]);
          expect(y).to.be.closeTo(Number(p.attrs["data-y"]), c.tolerance[1]);
        }
      }
    }
    const matrix = recordsOf("fabric-matrix")[0].record;
    const cells = elements(dom, "g", "edge");
    expect(cells).to.have.length(matrix.observations.edges.length);
    for (const e of matrix.observations.edges) {
      const cell = cells.find((c) => c.attrs["data-source"] === e.source && c.attrs["data-destination"] === e.destination)!;
      expect(Number(cell.attrs["data-gbps"])).to.equal(e.gbps);
      expect(cell.title).to.include(`${Number(e.gbps.toPrecision(4))} Gbit/s measured, budget ${Number(e.requiredGbps.toPrecision(4))} Gbit/s`);
    }
    expect(elements(dom, "td", "gate").length).to.be.greaterThan(40);
  });

  it("produces a screenshot of the page at the window's size", async () => {
    const shot = path.join(dir, "report.png");
    await chromium(dir, proxy.port, [`--screenshot=${shot}`, `--window-size=${WINDOW.width},${WINDOW.height}`, "--hide-scrollbars", pathToFileURL(page).href]);
    const png = fs.readFileSync(shot);
    expect([...png.subarray(0, 8)]).to.deep.equal([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    expect(png.subarray(12, 16).toString("latin1")).to.equal("IHDR");
    expect([png.readUInt32BE(16), png.readUInt32BE(20)]).to.deep.equal([WINDOW.width, WINDOW.height]);
    // A blank page of this size compresses to a few kilobytes; charts, text and the heat map do not.
    expect(png.length).to.be.greaterThan(60_000);
  });
});
