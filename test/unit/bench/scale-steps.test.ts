import { expect } from "chai";
import type { EngineEvent } from "@pulumi/pulumi/automation";
import { failureReason, tallySteps } from "../../../bench/scale/steps";

const urn = (type: string, name: string) => `urn:pulumi:bench-scale::narwhal-fleet::narwhal:fleet:Fleet$${type}::${name}`;
const meta = (op: string, type: string, name: string) => ({ op, urn: urn(type, name), type, provider: "" });
const pre = (op: string, type: string, name: string) => ({ sequence: 0, timestamp: 0, resourcePreEvent: { metadata: meta(op, type, name) } }) as unknown as EngineEvent;
const out = (op: string, type: string, name: string) => ({ sequence: 0, timestamp: 0, resOutputsEvent: { metadata: meta(op, type, name) } }) as unknown as EngineEvent;
const failed = (op: string, type: string, name: string) => ({ sequence: 0, timestamp: 0, resOpFailedEvent: { metadata: meta(op, type, name), status: 0, steps: 0 } }) as unknown as EngineEvent;

const GEN = "pulumi-nodejs:dynamic/narwhal:EngineGeneration";
const PRE = "pulumi-nodejs:dynamic/narwhal:Preflight";

describe("bench/scale steps", () => {
  it("counts a replacement once, by its logical step, and skips refreshes, same steps and providers", () => {
    const t = tallySteps();
    for (const e of [
      pre("refresh", GEN, "fleet-e16-generation"),
      pre("same", GEN, "fleet-e1-generation"),
      pre("replace", GEN, "fleet-e16-generation"),
      pre("create-replacement", GEN, "fleet-e16-generation"),
      out("create-replacement", GEN, "fleet-e16-generation"),
      out("replace", GEN, "fleet-e16-generation"),
      out("delete-replaced", GEN, "fleet-e16-generation"),
      pre("update", "pulumi:providers:command", "default"),
      out("update", "pulumi:providers:command", "default"),
      pre("update", "pulumi-nodejs:dynamic/narwhal:ProfileStore", "fleet-profiles-store"),
      out("update", "pulumi-nodejs:dynamic/narwhal:ProfileStore", "fleet-profiles-store"),
      pre("create", "narwhal:fleet:Thing", "fleet-new"),
      out("create", "narwhal:fleet:Thing", "fleet-new"),
    ]) {
      t.onEvent(e);
    }
    expect(t.tally()).to.deep.equal({
      remeasured: ["fleet-e16-generation", "fleet-new"],
      updated: ["fleet-profiles-store"],
      failed: [],
      planned: ["fleet-e16-generation: replace", "fleet-new: create", "fleet-profiles-store: update"],
    });
  });

  it("names a step that failed, and does not count a planned step that never finished", () => {
    const t = tallySteps();
    t.onEvent(pre("replace", PRE, "fleet-preflight"));
    t.onEvent(failed("create-replacement", PRE, "fleet-preflight"));
    expect(t.tally()).to.deep.include({ remeasured: [], failed: ["fleet-preflight"], planned: ["fleet-preflight: replace"] });
  });

  it("takes the reason after `error: ` from the diagnostic, not the CLI's closing line", () => {
    const message = [
      "code: 255",
      " stdout: Updating (bench-scale):",
      " ++ pulumi-nodejs:dynamic/narwhal:Preflight fleet-preflight creating replacement (28s) [diff: ~engines]; error: preflight failed: consume (e16 -> e1); the router is not started on it",
      "    error: update failed",
    ].join("\n");
    expect(failureReason(message)).to.equal("preflight failed: consume (e16 -> e1); the router is not started on it");
    expect(failureReason("error: update failed\nsomething else")).to.equal("error: update failed");
  });
});
