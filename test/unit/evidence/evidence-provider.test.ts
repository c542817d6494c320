import { expect } from "chai";
import * as fs from "node:fs";
import * as path from "node:path";
import { z } from "zod";
import { EvidenceStore } from "../../../lib/evidence/store";
import { UNKNOWN } from "../../../lib/unknown";
import { evidenceProvider, type EvidenceProviderSpec } from "../../../dynamic-providers/evidence-provider";
import { EVIDENCE_ALTERED } from "../../../dynamic-providers/integrity";
import { sampleRecord, tempDirs } from "./helpers";

interface In {
  stack: string;
  host: string;
  port: number;
  timeoutS: number;
  note?: string;
}
interface Out extends In {
  figure: number;
  evidence?: { relativePath: string; digest: string };
}

const base: In = { stack: "dev", host: "sim1", port: 5201, timeoutS: 30 };
const measured: Out = { ...base, figure: 9.5 };

function provider(extra: Partial<EvidenceProviderSpec<In, Out>> = {}) {
  return evidenceProvider<In, Out>({
    measuredAgainst: ["host", "port"],
    updatable: ["stack", "timeoutS"],
    async create(inputs) {
      return { id: inputs.host, outs: { ...inputs, figure: 9.5 } };
    },
    ...extra,
  });
}

describe("dynamic providers: the evidence provider helper", () => {
  describe("diff from the measured-against and updatable lists", () => {
    it("is no change when nothing either list names changed, and ignores inputs neither names", async () => {
      expect(await provider().diff!("x", measured, { ...base, note: "new" })).to.deep.equal({ changes: false, replaces: [], deleteBeforeReplace: false });
    });

    it("updates in place when only an updatable input changed", async () => {
      expect(await provider().diff!("x", measured, { ...base, timeoutS: 60 })).to.deep.equal({ changes: true, replaces: [], deleteBeforeReplace: false });
    });

    it("replaces, naming the measured-against inputs that changed in the list's order, and says changes with it", async () => {
      const d = await provider().diff!("x", measured, { ...base, port: 5202, host: "sim2", timeoutS: 60 });
      expect(d).to.deep.equal({ changes: true, replaces: ["host", "port"], deleteBeforeReplace: false });
    });

    it("counts a value a preview does not know yet as changed", async () => {
      expect((await provider().diff!("x", measured, { ...base, host: UNKNOWN })).replaces).to.deep.equal(["host"]);
    });

    it("compares what `compared` gives and adds the provider's own reasons after the lists'", async () => {
      const p = provider({
        compared: (olds, news) => ({ olds: { ...olds, port: olds.port ?? 5201 }, news: { ...news, port: news.port ?? 5201 } }),
        addition: (olds) => ({ replaces: olds.figure < 10 ? ["figure"] : [] }),
      });
      const { port: _absent, ...withoutPort } = measured;
      expect(await p.diff!("x", withoutPort, { ...base, host: "sim2" })).to.deep.equal({ changes: true, replaces: ["host", "figure"], deleteBeforeReplace: false });
    });

    it("lets an addition ask for an in-place update without a reason to replace", async () => {
      const p = provider({ addition: () => ({ changes: true }) });
      expect(await p.diff!("x", measured, base)).to.deep.equal({ changes: true, replaces: [], deleteBeforeReplace: false });
    });
  });

  describe("update", () => {
    it("keeps the measurement and takes the new inputs", async () => {
      expect(await provider().update!("x", measured, { ...base, timeoutS: 60 })).to.deep.equal({ outs: { ...measured, timeoutS: 60 } });
    });

    it("re-judges through the provider's update when it has one", async () => {
      const p = provider({ update: (olds, news) => ({ ...olds, ...news, figure: olds.figure * 2 }) });
      expect((await p.update!("x", measured, base)).outs.figure).to.equal(19);
    });
  });

  describe("check", () => {
    const schema = z.object({ host: z.string().min(1), port: z.number().int().min(1).max(65535), timeoutS: z.number().positive() });

    it("passes good inputs on unchanged, with no failures", async () => {
      expect(await provider({ inputs: schema }).check!({}, base)).to.deep.equal({ inputs: base });
    });

    it("refuses bad inputs with one failure per property, naming the field", async () => {
      const r = await provider({ inputs: schema }).check!({}, { ...base, port: 70000, timeoutS: -1 });
      expect(r.failures).to.have.length(2);
      expect(r.failures![0].property).to.equal("port");
      expect(r.failures![0].reason).to.match(/^port: .*65535/);
      expect(r.failures![1].property).to.equal("timeoutS");
      expect(r.failures![1].reason).to.match(/^timeoutS: /);
    });

    it("keeps a reason the provider wrote as written: one naming its own path, or a refinement's", async () => {
      const written = z.object({
        host: z.string().min(1, { error: "host must be a non-empty string" }),
        port: z.unknown().refine((p) => p !== 0, { error: "port 0 is not a port" }),
        timeoutS: z.number().positive(),
      });
      const r = await provider({ inputs: written }).check!({}, { ...base, host: "", port: 0, timeoutS: -1 });
      expect(r.failures!.slice(0, 2)).to.deep.equal([
        { property: "host", reason: "host must be a non-empty string" },
        { property: "port", reason: "port 0 is not a port" },
      ]);
      expect(r.failures![2].reason).to.match(/^timeoutS: /);
    });

    it("does not judge a property a preview does not know yet", async () => {
      expect(await provider({ inputs: schema }).check!({}, { ...base, port: UNKNOWN as unknown as number })).to.deep.equal({ inputs: { ...base, port: UNKNOWN } });
    });

    it("fills in defaults beside the check's failures", async () => {
      const p = provider({
        inputs: z.looseObject({ port: z.unknown().refine((port) => port !== 0, { error: "port 0 is not a port" }) }),
        defaults: (news) => ({ ...news, note: news.note ?? "none" }),
      });
      expect(await p.check!({}, { ...base, port: 0 })).to.deep.equal({ inputs: { ...base, port: 0, note: "none" }, failures: [{ property: "port", reason: "port 0 is not a port" }] });
    });
  });

  describe("evidence integrity", () => {
    const dirs = tempDirs();
    const cwd = process.cwd();
    afterEach(() => process.chdir(cwd));

    it("is always applied: a record altered on disk replaces the resource, reason `evidence`, after the provider's own read", async () => {
      process.chdir(dirs.tmp());
      const written = await new EvidenceStore(dirs.root()).write(sampleRecord());
      fs.chmodSync(path.join(dirs.root(), written.relativePath), 0o600);
      fs.appendFileSync(path.join(dirs.root(), written.relativePath), " ");
      const props: Out = { ...measured, evidence: { relativePath: written.relativePath, digest: written.digest } };
      const p = provider({ read: async (id, seen) => ({ id, props: { ...seen, figure: 1 } }) });
      const read = await p.read!("x", props);
      expect(read.props.figure).to.equal(1);
      expect(await p.diff!("x", read.props, { ...base, port: 5202 })).to.deep.equal({ changes: true, replaces: ["port", EVIDENCE_ALTERED], deleteBeforeReplace: false });
    });
  });
});
