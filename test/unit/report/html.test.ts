import { expect } from "chai";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { EvidenceStore } from "../../../lib/evidence/store";
import { collectReport } from "../../../lib/report/html/collect";
import { CONTENT_SECURITY_POLICY, renderReport } from "../../../lib/report/html/page";
import { esc } from "../../../lib/report/html/escape";
import { evidencePointers, heldGenerations } from "../../../lib/report/html/select";
import type { ReportData } from "../../../lib/report/html/types";
import { attrsOf, chartOf, elements, FIXTURE_STACK, FIXTURE_STORE, recordsOf, stored } from "../../fixtures/report/page";
import { predictTpotS, predictTtftS, TRIAL_ARTIFACTS, TRIAL_CURVE, TRIAL_POINTS, TRIAL_SLO, trialRecord } from "../../fixtures/report/trial";

const ENGINES = ["e1", "e2", "e3", "e4"];
const NOW = new Date("2026-11-29T15:00:00.000Z");
const fixture = (pointers?: Map<string, string>): Promise<ReportData> => collectReport(new EvidenceStore(FIXTURE_STORE), { stack: FIXTURE_STACK, now: NOW, ...(pointers ? { pointers } : {}) });
/** The profile record shown for each engine (the fixture has one per engine) and its sidecar entry. */
const profiles = () =>
  new Map(recordsOf("profile").map(({ relativePath, record }) => [record.subject.alias as string, { relativePath, record, samples: stored(record.artifacts[0].relativePath) }]));
const newest = (kind: string) => recordsOf(kind).sort((a, b) => (a.record.endedAt < b.record.endedAt ? 1 : -1))[0];

function tmpCopy(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "report-"));
  fs.cpSync(FIXTURE_STORE, path.join(dir, "evidence"), { recursive: true });
  return path.join(dir, "evidence");
}

describe("evidence report: the page built from a fixture store", () => {
  let html: string;
  let data: ReportData;
  before(async () => {
    data = await fixture();
    html = renderReport(data);
  });

  it("forbids every fetch and carries no script, link or external reference", () => {
    expect(CONTENT_SECURITY_POLICY).to.equal("default-src 'none'; style-src 'unsafe-inline'");
    const meta = [...html.matchAll(/<meta\b([^>]*)>/g)].map((m) => attrsOf(m[1])).find((a) => a["http-equiv"] === "Content-Security-Policy");
    expect(meta?.content).to.equal(CONTENT_SECURITY_POLICY);
    expect(html.indexOf("Content-Security-Policy")).to.be.below(html.indexOf("<title>"));
    expect(html).to.not.match(/<script|<link|<img|<iframe|\bsrc=|\bhref=|url\(|@import/i);
    expect(html).to.match(/^<!DOCTYPE html>/);
  });

  it("draws every prefill timing and median where the stored values put them", () => {
    for (const [engine, p] of profiles()) {
      const c = chartOf(html, "prefill", engine);
      const samples = elements(c.body, "circle", "sample");
      expect(samples.map((s) => [Number(s.attrs["data-x"]), Number(s.attrs["data-y"])]), engine).to.deep.equal(p.samples.prefill);
      const medians = elements(c.body, "circle", "fit-point");
      expect(medians.map((s) => [Number(s.attrs["data-x"]), Number(s.attrs["data-y"])]), engine).to.deep.equal(p.samples.prefill_fit_points);
      for (const s of [...samples, ...medians]) {
        const [x, y] = c.value(Number(s.attrs.cx), Number(s.attrs.cy));
        expect(x).to.be.closeTo(Number(s.attrs["data-x"]), c.tolerance[0]);
        expect(y).to.be.closeTo(Number(s.attrs["data-y"]), c.tolerance[1]);
      }
      expect(medians[0].title).to.match(/^\d+ tokens: [\d.]+ ms median, fit [\d.]+ ms$/);
    }
  });

  it("draws the prefill quadratic over the measured lengths from the stored coefficients", () => {
    for (const [engine, p] of profiles()) {
      const row = p.record.observations.row;
      const c = chartOf(html, "prefill", engine);
      const [fit] = elements(c.body, "polyline", "fit");
      const pts = fit.attrs.points.split(" ").map((xy) => c.value(...(xy.split(",").map(Number) as [number, number])));
      expect(pts[0][0]).to.be.closeTo(row.prefill_min_tokens, c.tolerance[0]);
      expect(pts[pts.length - 1][0]).to.be.closeTo(row.prefill_max_tokens, c.tolerance[0]);
      for (const [n, t] of pts) expect(t, `${engine} at ${n} tokens`).to.be.closeTo(row.ttft_a * n * n + row.ttft_b * n + row.ttft_c, c.tolerance[1] + c.tolerance[0] * (2 * row.ttft_a * n + row.ttft_b));
      expect(fit.title).to.include(`over ${row.prefill_min_tokens}–${row.prefill_max_tokens} tokens`);
    }
  });

  it("draws every decode point against resident KV tokens and one fitted line per request level", () => {
    for (const [engine, p] of profiles()) {
      const row = p.record.observations.row;
      const c = chartOf(html, "decode", engine);
      const points = elements(c.body, "circle", "decode-point");
      expect(points.map((s) => [Number(s.attrs["data-requests"]), Number(s.attrs["data-x"]), Number(s.attrs["data-y"])]), engine).to.deep.equal(p.samples.decode);
      for (const s of points) {
        const [x, y] = c.value(Number(s.attrs.cx), Number(s.attrs.cy));
        expect(x).to.be.closeTo(Number(s.attrs["data-x"]), c.tolerance[0]);
        expect(y).to.be.closeTo(Number(s.attrs["data-y"]), c.tolerance[1]);
      }
      const lines = elements(c.body, "polyline", "fit");
      expect(lines.map((l) => Number(l.attrs["data-requests"]))).to.deep.equal([...new Set(p.samples.decode.map((d: number[]) => Math.round(d[0])))].sort((a, b) => (a as number) - (b as number)));
      for (const l of lines) {
        const r = Number(l.attrs["data-requests"]);
        for (const xy of l.attrs.points.split(" ")) {
          const [kv, s] = c.value(...(xy.split(",").map(Number) as [number, number]));
          expect(s).to.be.closeTo(row.tpot_intercept + row.tpot_request_slope * r + row.tpot_slope * kv, c.tolerance[1] + c.tolerance[0] * row.tpot_slope);
        }
      }
    }
  });

  it("puts each edge of the matrix in its heat cell with its Gbit/s, its budget and when it was measured", () => {
    const matrix = recordsOf("fabric-matrix")[0].record;
    const cells = elements(html, "g", "edge");
    expect(cells).to.have.length(matrix.observations.edges.length);
    for (const e of matrix.observations.edges) {
      const cell = cells.find((c) => c.attrs["data-source"] === e.source && c.attrs["data-destination"] === e.destination)!;
      expect(Number(cell.attrs["data-gbps"])).to.equal(e.gbps);
      expect(Number(cell.attrs["data-required-gbps"])).to.equal(e.requiredGbps);
      expect(cell.attrs["data-verdict"]).to.equal(e.verdict);
      const measuredAt = stored(e.evidence.relativePath).observations.measurement.startedAt;
      expect(cell.title).to.equal(`${e.source} → ${e.destination}: ${Number(e.gbps.toPrecision(4))} Gbit/s measured, budget ${Number(e.requiredGbps.toPrecision(4))} Gbit/s, met (${Number((e.gbps / e.requiredGbps).toPrecision(4))}× budget), ${e.retransmits} retransmits; measured ${measuredAt}`);
    }
    expect(data.fabric!.hosts).to.deep.equal(matrix.observations.matrix.hosts);
    expect(elements(html, "rect", "empty")).to.have.length(3);
  });

  it("shows the newest preflight's gates per engine and per pair, with the lines in each cell", () => {
    const shown = newest("preflight");
    expect(data.preflight!.provenance.relativePath).to.equal(shown.relativePath);
    const tds = elements(html, "td", "gate").map((t) => t.attrs);
    for (const g of shown.record.observations.gates) {
      for (const line of g.lines) {
        const pair = /^(e\d) -> (e\d)\b/.exec(line.message);
        const subject = pair ? `${pair[1]} -> ${pair[2]}` : (/^(e\d)\b/.exec(line.message)?.[1] ?? "fleet");
        const td = tds.find((t) => t["data-subject"] === subject && t["data-gate"] === g.gate);
        expect(td, `${g.gate} ${subject}`).to.not.equal(undefined);
        expect(td!.title.split("\n")).to.include(line.message);
      }
    }
    expect(tds.filter((t) => t["data-gate"] === "consume" && t["data-subject"].includes(" -> "))).to.have.length(12);
    expect(tds.map((t) => t["data-status"])).to.satisfy((ss: string[]) => ss.length > 0 && ss.every((x) => x === "ok"));
  });

  it("shows the stack's own preflight when its outputs point at an earlier, failed one", async () => {
    const failed = recordsOf("preflight").find((r) => r.record.verdict.status === "fail")!;
    const d = await fixture(evidencePointers({ preflight: { value: { evidence: { relativePath: failed.relativePath, digest: `sha256:${path.basename(failed.relativePath, ".json")}` } }, secret: false } }));
    expect(d.selection).to.equal("stack outputs");
    expect(d.preflight!.provenance).to.deep.include({ relativePath: failed.relativePath, status: "fail", chosenBy: "stack" });
    for (const e of ENGINES) expect(d.preflight!.cells[e].profile!.status, e).to.equal("fail");
    const page = renderReport(d);
    expect(page).to.include(`data-subject="e1" data-gate="profile" data-status="fail"`);
    expect(page).to.include("e1 decode_fit_mape 0.2635 exceeds the profile-validation limit 0.05");
    // Kinds the outputs name nothing of still show their newest records.
    expect(d.profiles.map((p) => p.provenance.chosenBy)).to.deep.equal(["newest", "newest", "newest", "newest"]);
  });

  it("takes the generation the stack's outputs say each engine runs as the held record", async () => {
    const gens = recordsOf("generation");
    // The Automation API's shape: each output as {value, secret}.
    const outputs = { engines: { value: Object.fromEntries(gens.map(({ record }) => [record.subject.alias, { host: "x", generationDigest: record.observations.generationDigest }])), secret: false } };
    expect([...heldGenerations(outputs).keys()].sort()).to.deep.equal(ENGINES);
    const d = await collectReport(new EvidenceStore(FIXTURE_STORE), { stack: FIXTURE_STACK, generations: heldGenerations(outputs) });
    expect(d.selection).to.equal("stack outputs");
    for (const row of d.identities) expect(row.generation!.provenance.chosenBy, row.engineId).to.equal("stack");
    // A generation the store does not hold leaves that engine without a generation rather than showing another one.
    const other = new Map(heldGenerations(outputs)).set("e3", `sha256:${"0".repeat(64)}`);
    const d2 = await collectReport(new EvidenceStore(FIXTURE_STORE), { stack: FIXTURE_STACK, generations: other });
    expect(d2.identities.find((i) => i.engineId === "e3")!.generation).to.equal(undefined);
  });

  it("lists each engine's generation and attestation, when each was taken, and whether its profile binds that generation", () => {
    expect(data.identities.map((i) => i.engineId)).to.deep.equal(ENGINES);
    for (const { record } of recordsOf("generation")) {
      const row = html.match(new RegExp(`<tr data-engine="${record.subject.alias}">(.*?)</tr>`))![1];
      expect(row).to.include(`title="${record.observations.generationDigest}"`);
      expect(row).to.include(`<td>${record.inputs.processIdentity.hostAlias}</td>`);
      expect(row).to.include(`<td>${record.observations.processStartTime}</td>`);
      expect(row).to.include(`<td title="generation/`);
      expect(row).to.include(record.endedAt.replace("T", " ").replace(/\.\d+Z$/, "Z"));
      expect(row).to.match(/<td>yes<\/td>$/);
    }
    for (const { record } of recordsOf("attestation")) expect(html).to.include(`title="${record.observations.attestationDigest}"`);
  });

  it("has no capacity section when the store holds no load-trial record", () => {
    expect(data.capacity).to.equal(undefined);
    expect(html).to.not.include("Capacity trial");
    expect(html).to.not.match(/data-chart="capacity-/);
  });

  it("says when each record was measured and which record it is", () => {
    for (const [, p] of profiles()) expect(html).to.include(`<time datetime="${p.record.startedAt}">`);
    expect(html).to.include(`<time datetime="${recordsOf("fabric-matrix")[0].record.endedAt}">`);
    expect(html).to.include(`Written 2026-11-29 15:00:00Z from the evidence store`);
    expect(data.invalid).to.deep.equal([]);
  });
});

describe("evidence report: stores that are not as written", () => {
  it("lists a record whose bytes no longer match its digest as invalid evidence and does not draw it", async () => {
    const root = tmpCopy();
    try {
      const victim = recordsOf("generation").find((r) => r.record.subject.alias === "e2")!;
      const file = path.join(root, victim.relativePath);
      fs.chmodSync(file, 0o600);
      fs.writeFileSync(file, fs.readFileSync(file, "utf8").replace(victim.record.observations.version, "9.9.9"));
      const d = await collectReport(new EvidenceStore(root), { stack: FIXTURE_STACK });
      expect(d.invalid.map((i) => i.relativePath)).to.deep.equal([victim.relativePath]);
      expect(d.invalid[0].reason).to.match(/its bytes changed after it was written/);
      expect(d.identities.find((i) => i.engineId === "e2")!.generation).to.equal(undefined);
      const page = renderReport(d);
      expect(page).to.include(`<li><code>${victim.relativePath}</code>`);
      expect(page).to.not.include("9.9.9");
    } finally {
      fs.rmSync(path.dirname(root), { recursive: true, force: true });
    }
  });

  it("escapes what a record says, so a gate line cannot become markup", async () => {
    const root = tmpCopy();
    try {
      const store = new EvidenceStore(root);
      const base = newest("preflight").record;
      const hostile = `e1 </td><script>alert("x")</script><img src=x onerror=alert(1)> & 'quoted'`;
      const gates = base.observations.gates.map((g: any) => (g.gate === "reach" ? { ...g, verdict: "fail", lines: [{ status: "fail", message: hostile }] } : g));
      await store.write({ ...base, startedAt: "2026-11-29T14:59:00.000Z", endedAt: "2026-11-29T14:59:01.000Z", observations: { ...base.observations, gates }, verdict: { status: "fail", reasons: [hostile] } });
      const page = renderReport(await collectReport(store, { stack: FIXTURE_STACK }));
      expect(page).to.not.match(/<script|<img|onerror=alert\(1\)>/);
      expect(page).to.include(esc(hostile));
      expect(page).to.include(`data-subject="e1" data-gate="reach" data-status="fail"`);
    } finally {
      fs.rmSync(path.dirname(root), { recursive: true, force: true });
    }
  });

  it("shows a degraded run's status, its skipped gates and warnings above the grid", async () => {
    const root = tmpCopy();
    try {
      const store = new EvidenceStore(root);
      const base = newest("preflight").record;
      const skipped = [{ gate: "contract", message: "contract 0123456789abcdef undeclared: connector_version, transfer_version" }];
      const warnings = [{ gate: "calibration", message: "first-token deadline has no calibration evidence" }];
      await store.write({ ...base, startedAt: "2026-11-29T14:59:00.000Z", endedAt: "2026-11-29T14:59:01.000Z", observations: { ...base.observations, status: "degraded", skipped, warnings } });
      const data = await collectReport(store, { stack: FIXTURE_STACK });
      expect(data.preflight!.run).to.deep.equal({ status: "degraded", skipped: [`contract: ${skipped[0].message}`], warnings: [`calibration: ${warnings[0].message}`] });
      const page = renderReport(data);
      expect(page).to.include(`<p class="preflight-status" data-status="degraded">run status: degraded</p>`);
      expect(page).to.include(`<li>contract: ${skipped[0].message}</li>`);
    } finally {
      fs.rmSync(path.dirname(root), { recursive: true, force: true });
    }
  });

  it("still draws the fitted curves when a profile's sidecar cannot be read, and says why the points are missing", async () => {
    const root = tmpCopy();
    try {
      const victim = profiles().get("e3")!;
      fs.rmSync(path.join(root, victim.record.artifacts[0].relativePath));
      const d = await collectReport(new EvidenceStore(root), { stack: FIXTURE_STACK });
      const e3 = d.profiles.find((p) => p.engineId === "e3")!;
      expect(e3.prefill).to.deep.equal([]);
      expect(e3.samplesProblem).to.match(/is invalid: expected sha256:/);
      const page = renderReport(d);
      expect(elements(chartOf(page, "prefill", "e3").body, "polyline", "fit")).to.have.length(1);
      expect(elements(chartOf(page, "prefill", "e3").body, "circle", "sample")).to.deep.equal([]);
      expect(page).to.include("raw observations not shown:");
    } finally {
      fs.rmSync(path.dirname(root), { recursive: true, force: true });
    }
  });

  it("writes a page with each section saying it has nothing when the store is empty", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "report-"));
    try {
      const page = renderReport(await collectReport(new EvidenceStore(path.join(dir, "evidence")), { stack: "empty" }));
      for (const what of ["no profile evidence", "no fabric matrix evidence", "no preflight evidence", "no generation or attestation evidence", "every record in the store matches its digest"]) expect(page).to.include(what);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("evidence report: the capacity trial (Gate G)", () => {
  let root: string;
  let written: Map<string, { relativePath: string; digest: string }>;
  let data: ReportData;
  let html: string;
  before(async () => {
    root = tmpCopy();
    const store = new EvidenceStore(root);
    written = new Map();
    for (const p of TRIAL_POINTS) {
      const artifacts = [];
      for (const name of TRIAL_ARTIFACTS) artifacts.push(await store.writeArtifact("load-trial", name, `${p.id} ${name}\n`));
      written.set(p.id, await store.write(trialRecord(FIXTURE_STACK, p, artifacts)));
    }
    data = await collectReport(store, { stack: FIXTURE_STACK, now: NOW });
    html = renderReport(data);
  });
  after(() => fs.rmSync(path.dirname(root), { recursive: true, force: true }));

  it("draws each point's median and p99 TTFT and median TPOT at its offered rate", () => {
    expect(html).to.include(`<h2>Capacity trial (Gate G)</h2>`);
    const ttft = chartOf(html, "capacity-ttft", "fleet");
    const tpot = chartOf(html, "capacity-tpot", "fleet");
    const read = (c: typeof ttft, cls: string) =>
      elements(c.body, "circle", cls).map((e) => {
        const [x, y] = c.value(Number(e.attrs.cx), Number(e.attrs.cy));
        expect(x).to.be.closeTo(Number(e.attrs["data-x"]), c.tolerance[0]);
        expect(y).to.be.closeTo(Number(e.attrs["data-y"]), c.tolerance[1]);
        return [e.attrs["data-point"], Number(e.attrs["data-x"]), Number(e.attrs["data-y"])];
      });
    expect(read(ttft, "measured-p50")).to.deep.equal(TRIAL_POINTS.map((p) => [p.id, p.rate, p.p50TtftMs]));
    expect(read(ttft, "measured-p99")).to.deep.equal(TRIAL_POINTS.map((p) => [p.id, p.rate, p.p99TtftMs]));
    expect(read(tpot, "measured-p50")).to.deep.equal(TRIAL_POINTS.map((p) => [p.id, p.rate, p.p50TpotMs]));
    expect(elements(tpot.body, "circle", "measured-p99")).to.deep.equal([]);
  });

  it("draws the SLO as a horizontal line at its bound on each chart", () => {
    for (const [chart, bound] of [["capacity-ttft", TRIAL_SLO.ttftS * 1000], ["capacity-tpot", TRIAL_SLO.tpotS * 1000]] as const) {
      const c = chartOf(html, chart, "fleet");
      const [line] = elements(c.body, "line", "slo");
      expect(elements(c.body, "line", "slo"), chart).to.have.length(1);
      expect(Number(line.attrs["data-y"])).to.equal(bound);
      expect(line.attrs.y1).to.equal(line.attrs.y2);
      expect(c.value(Number(line.attrs.x1), Number(line.attrs.y1))[1]).to.be.closeTo(bound, c.tolerance[1]);
      expect(line.title).to.equal(`SLO: ${chart === "capacity-ttft" ? "TTFT" : "TPOT"} ≤ ${bound} ms (points p1, p2, p3, p4)`);
    }
  });

  it("draws the predicted curve from the stored prediction, cut where it leaves the chart", () => {
    for (const [chart, predict] of [["capacity-ttft", predictTtftS], ["capacity-tpot", predictTpotS]] as const) {
      const c = chartOf(html, chart, "fleet");
      const [curve] = elements(c.body, "polyline", "predicted");
      const pts = curve.attrs.points.split(" ").map((xy) => c.value(...(xy.split(",").map(Number) as [number, number])));
      // One vertex per stored curve point, in order, up to the last one inside the frame.
      const yTop = Number(c.svg["data-domain"].split(" ")[3]);
      const inside = TRIAL_CURVE.filter((q) => predict(q.rate) * 1000 <= yTop);
      expect(pts).to.have.length(inside.length);
      expect(inside.length).to.be.greaterThan(10);
      pts.forEach(([rate, ms], i) => {
        expect(rate).to.be.closeTo(inside[i].rate, c.tolerance[0]);
        expect(ms, `${chart} at ${inside[i].rate} req/s`).to.be.closeTo(predict(inside[i].rate) * 1000, c.tolerance[1]);
      });
    }
    // TTFT's prediction grows without bound towards 8 req/s: the line stops, and says where.
    const [ttftCurve] = elements(chartOf(html, "capacity-ttft", "fleet").body, "polyline", "predicted");
    expect(ttftCurve.title).to.match(/^predicted TTFT from the stored profile fits \(points p1, p2, p3, p4\); above \d+ ms from [\d.]+ req\/s, off the chart$/);
  });

  it("marks and labels the point that departs from prediction and every point that does not pass", () => {
    const c = chartOf(html, "capacity-ttft", "fleet");
    const rings = elements(c.body, "circle", "departure");
    expect(rings.map((r) => r.attrs["data-point"])).to.deep.equal(["p2"]);
    expect(rings[0].title).to.equal("p2 departs from prediction: TTFT +34.6%, TPOT +3.8% (bound 25%)");
    const labels = [...c.body.matchAll(/<text class="point-label" data-point="([^"]+)"[^>]*>([^<]*)<\/text>/g)].map((m) => [m[1], m[2]]);
    expect(labels).to.deep.equal([
      ["p2", "p2: departs"],
      ["p3", "p3: slo-miss"],
      ["p4", "p4: unreconciled"],
    ]);
    const notPass = elements(c.body, "circle", "not-pass").map((e) => e.attrs["data-point"]);
    expect([...new Set(notPass)]).to.deep.equal(["p3", "p4"]);
  });

  it("tabulates every point's figures, prediction, departure, verdict and reasons, escaped", () => {
    const rows = Object.fromEntries([...html.matchAll(/<tr data-point="([^"]+)"([^>]*)>(.*?)<\/tr>/g)].map((m) => [m[1], { attrs: attrsOf(m[2]), cells: [...m[3].matchAll(/<t[hd][^>]*>(.*?)<\/t[hd]>/g)].map((c) => c[1]) }]));
    expect(Object.keys(rows)).to.deep.equal(["p1", "p2", "p3", "p4"]);
    expect(rows.p1.cells.slice(0, 10)).to.deep.equal(["p1", "1 / 0.995", "170 / 260", "22", "100%", "0 of 40", "165.7 / 22", "within: TTFT +2.6%, TPOT +0.0% (bound 25%)", "pass", ""]);
    expect(rows.p2.attrs["data-departs"]).to.equal("true");
    expect(rows.p2.cells[7]).to.equal("flagged: TTFT +34.6%, TPOT +3.8% (bound 25%)");
    expect(rows.p3.attrs).to.deep.include({ "data-verdict": "slo-miss", class: "not-pass" });
    expect(rows.p3.cells[8]).to.equal("slo-miss");
    expect(rows.p3.cells[9]).to.equal(`<ul><li>${esc(TRIAL_POINTS[2].reasons![0])}</li></ul>`);
    expect(rows.p4.cells[5]).to.equal("3 of 40");
    expect(rows.p4.cells[9]).to.equal(`<ul>${[...TRIAL_POINTS[3].reasons!, ...TRIAL_POINTS[3].causes!].map((r) => `<li>${esc(r)}</li>`).join("")}</ul>`);
    expect(html).to.include("failed scrape: &lt;e2&gt; /metrics answered 503 &amp; was skipped");
    expect(html).to.not.include("<e2>");
    expect(rows.p1.cells[10]).to.include("(newest in the store)");
  });

  it("shows only the points the stack's capacity output points at, as held by the stack", async () => {
    const held = (id: string) => ({ verdict: "pass", offeredRate: 1, evidence: written.get(id)! });
    const outputs = { capacity: { value: { points: { p1: held("p1"), p3: held("p3") } }, secret: false } };
    const d = await collectReport(new EvidenceStore(root), { stack: FIXTURE_STACK, pointers: evidencePointers(outputs) });
    expect(d.capacity!.points.map((p) => [p.pointId, p.provenance.chosenBy])).to.deep.equal([
      ["p1", "stack"],
      ["p3", "stack"],
    ]);
  });

  it("lists a trial record it cannot place against offered rate instead of drawing it", async () => {
    const store = new EvidenceStore(root);
    const broken = trialRecord(FIXTURE_STACK, { ...TRIAL_POINTS[0], id: "p9", at: "2026-11-29T14:50:00.000Z" }, []);
    const o = broken.observations as { point: Record<string, unknown> };
    delete o.point.rate;
    const w = await store.write(broken);
    const d = await collectReport(store, { stack: FIXTURE_STACK });
    expect(d.capacity!.unreadable).to.deep.equal([{ relativePath: w.relativePath, reason: "its observations carry no point.rate, so it cannot be placed against offered rate" }]);
    expect(d.capacity!.points.map((p) => p.pointId)).to.deep.equal(["p1", "p2", "p3", "p4"]);
    expect(renderReport(d)).to.include(`<li><code>${w.relativePath}</code>: its observations carry no point.rate`);
  });
});
