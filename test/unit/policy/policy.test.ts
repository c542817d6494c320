/**
 * lib/policy's gates against a recorded converged stack (test/fixtures/policy/converged.json: the
 * resources of a two-engine stack after `pulumi up`, as the pack sees them, with secrets and bulky
 * outputs dropped), and against that stack edited to break one piece of evidence at a time.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { expect } from "chai";
import { SECRET_CONFIG_KEYS } from "../../../lib/config/secrets";
import { UNKNOWN } from "../../../lib/unknown";
import { judge, POLICY_NAMES, UNKNOWN_VALUES, PolicyName, PolicyOptions, routerDocumentText, StackResource, stackNameOf } from "../../../lib/policy/evidence-gates";

const FIXTURE = path.join(__dirname, "..", "..", "fixtures", "policy", "converged.json");
const SECURE = { secure: "v1:abc" };
const CONFIG: PolicyOptions = { stackConfig: { path: "Pulumi.policy.yaml", config: { "narwhal-fleet:engineApiKey": SECURE } } };

function converged(): StackResource[] {
  return JSON.parse(fs.readFileSync(FIXTURE, "utf8")) as StackResource[];
}

/** The stack with one resource's outputs edited (or the resource removed when `edit` returns null). */
function edited(name: string, edit: (props: Record<string, unknown>) => Record<string, unknown> | null): StackResource[] {
  const out: StackResource[] = [];
  let found = false;
  for (const r of converged()) {
    if (r.name !== name) {
      out.push(r);
      continue;
    }
    found = true;
    const props = edit({ ...r.props });
    if (props) out.push({ ...r, props });
  }
  if (!found) throw new Error(`fixture has no resource ${name}`);
  return out;
}

const messages = (policy: PolicyName, resources: StackResource[], opts: PolicyOptions = CONFIG): string[] => judge(policy, resources, opts).map((v) => v.message);
const propsOf = (resources: StackResource[], name: string): Record<string, unknown> => resources.find((r) => r.name === name)!.props;

describe("lib/policy: the evidence gates of the policy pack", () => {
  it("knows every unknown-value sentinel @pulumi/policy hands the pack", () => {
    const proxy = require(path.join(__dirname, "..", "..", "..", "policy", "node_modules", "@pulumi", "policy", "proxy.js")) as Record<string, unknown>;
    const sentinels = Object.entries(proxy).filter(([k]) => /^unknown[A-Z]\w*Value$/.test(k)).map(([, v]) => v);
    expect(sentinels).to.have.length(7);
    expect([...UNKNOWN_VALUES].sort()).to.deep.equal([...sentinels].sort());
  });

  it("finds no violation on a converged stack", () => {
    const resources = converged();
    for (const policy of POLICY_NAMES) expect(messages(policy, resources), policy).to.deep.equal([]);
    expect(stackNameOf(resources)).to.equal("policy");
  });

  describe("engine-evidence", () => {
    it("names an engine whose cache capture is missing (fail closed)", () => {
      const gen = String(propsOf(converged(), "fleet-p1-generation")["generationDigest"]);
      expect(messages("engine-evidence", edited("fleet-p1-cache", () => null))).to.deep.equal([
        `engine p1: no cache capture in the stack (fail closed: missing evidence is a violation). Fix: run \`pulumi up\` to measure the cache capture of generation ${gen}.`,
      ]);
    });

    it("names an engine with no generation at all", () => {
      expect(messages("engine-evidence", edited("fleet-p2-generation", () => null))).to.deep.equal([
        "engine p2: no EngineGeneration in the stack: nothing proves which process serves it. Fix: run `pulumi up` to prove the engine's generation and re-measure its evidence.",
      ]);
    });

    it("names evidence bound to another generation, with both digests", () => {
      const gen = String(propsOf(converged(), "fleet-p2-generation")["generationDigest"]);
      const stale = "sha256:" + "0".repeat(64);
      expect(messages("engine-evidence", edited("fleet-attestation-p2", (p) => ({ ...p, generationDigest: stale })))).to.deep.equal([
        `engine p2: attestation fleet-attestation-p2 is bound to generation ${stale}, but the engine's current generation is ${gen} (fleet-p2-generation). Fix: run \`pulumi up\` to re-measure it against the running process.`,
      ]);
    });

    it("names a profile measured under another attestation of the engine", () => {
      const attested = String(propsOf(converged(), "fleet-attestation-p1")["attestationDigest"]);
      const other = "sha256:" + "2".repeat(64);
      expect(messages("engine-evidence", edited("fleet-profiles-p1", (p) => ({ ...p, attestationDigest: other })))).to.deep.equal([
        `engine p1: profile fleet-profiles-p1 was measured under attestation ${other}, but the engine's attestation is ${attested} (fleet-attestation-p1). Fix: run \`pulumi up\` to profile the engine again under its current attestation.`,
      ]);
    });

    it("names a measured profile that records no generation, and leaves evidence this update measures to the update", () => {
      expect(messages("engine-evidence", edited("fleet-profiles-p1", (p) => ({ ...p, generationDigest: undefined })))).to.deep.equal([
        "engine p1: profile fleet-profiles-p1 records no generationDigest: it is bound to no generation. Fix: run `pulumi up` to measure it again.",
      ]);
      // A replacement in preview: the generation's digest is unknown, its dependants' bindings too.
      const pending = edited("fleet-p1-generation", (p) => ({ ...p, generationDigest: UNKNOWN, provedAt: UNKNOWN }));
      expect(messages("engine-evidence", pending)).to.deep.equal([]);
      // A dynamic resource created in preview has no outputs yet: absent, not missing.
      expect(messages("engine-evidence", edited("fleet-p1-cache", (p) => ({ ...p, generationDigest: UNKNOWN, capturedAt: undefined })))).to.deep.equal([]);
    });

    it("counts a configured engine that has no evidence at all", () => {
      const resources = converged().map((r) =>
        r.type === "pulumi:providers:pulumi-nodejs"
          ? { ...r, props: { ...r.props, "narwhal-fleet:engines": JSON.stringify([{ id: "p1" }, { id: "p2" }, { id: "p3" }]) } }
          : r,
      );
      expect(messages("engine-evidence", resources)).to.deep.equal([
        "engine p3: no EngineGeneration in the stack: nothing proves which process serves it. Fix: run `pulumi up` to prove the engine's generation and re-measure its evidence.",
      ]);
    });
  });

  describe("pinned-identity", () => {
    it("rejects a docker image checked by tag, accepts one pinned by digest", () => {
      const byTag = edited("fleet-p1-image-check", (p) => ({ ...p, runtime: { kind: "docker", image: "vllm/vllm-openai:latest", dockerCommand: "docker" } }));
      expect(messages("pinned-identity", byTag)).to.deep.equal([
        'engine p1: image check fleet-p1-image-check checked image "vllm/vllm-openai:latest", which is not pinned by digest. Fix: set narwhal-fleet:runtime.image to `sha256:<64 hex>` or `<repo>@sha256:<64 hex>` and run `pulumi up`.',
      ]);
      const pinned = edited("fleet-p1-image-check", (p) => ({ ...p, runtime: { kind: "docker", image: `vllm/vllm-openai@sha256:${"a".repeat(64)}`, dockerCommand: "docker" } }));
      expect(messages("pinned-identity", pinned)).to.deep.equal([]);
    });

    it("rejects a native runtime whose executable has no recorded SHA-256", () => {
      const unhashed = edited("fleet-p2-image-check", (p) => ({ ...p, identity: { ...(p["identity"] as object), sha256: null } }));
      expect(messages("pinned-identity", unhashed)).to.deep.equal([
        "engine p2: image check fleet-p2-image-check records no SHA-256 of the native vLLM executable it checked. Fix: make the executable readable on the host and run `pulumi up --refresh`.",
      ]);
    });

    it("rejects a host key neither pinned nor recorded on first contact", () => {
      expect(messages("pinned-identity", edited("fleet-sim11", (p) => ({ ...p, hostKey: "" })))).to.deep.equal([
        "host sim11: discovery fleet-sim11 neither pins a host key nor recorded the one presented on first contact. Fix: pin the host's key (narwhal-fleet:hosts[].hostKey) and run `pulumi up --refresh`.",
      ]);
      expect(messages("pinned-identity", edited("fleet-sim11", (p) => ({ ...p, allowFirstContact: false })))).to.deep.equal([
        "host sim11: discovery fleet-sim11 has no pinned host key and first contact is not allowed. Fix: pin the host's key (narwhal-fleet:hosts[].hostKey, from `ssh-keyscan`) and run `pulumi up`.",
      ]);
      expect(messages("pinned-identity", edited("fleet-sim11", (p) => ({ ...p, hostKey: "", allowFirstContact: false, pinnedHostKey: "ssh-ed25519 AAAA" })))).to.deep.equal([]);
    });
  });

  describe("router-after-preflight", () => {
    it("reads the served document back from the router's start command", () => {
      const create = propsOf(converged(), "fleet-router-host-router-process")["create"] as string;
      expect(JSON.parse(routerDocumentText(create)!)).to.include({ schema: "narwhal.fleet", model: "tiny-llama" });
    });

    it("rejects a router with no preflight in the stack", () => {
      expect(messages("router-after-preflight", edited("fleet-preflight", () => null))).to.deep.equal([
        "router fleet-router-host-router-process runs without a preflight in the stack (fail closed: missing evidence is a violation). Fix: run `pulumi up` so the preflight runs before the router.",
      ]);
    });

    it("ignores a router a targeted update skips creating (no start command), as no router runs", () => {
      const skipped = edited("fleet-preflight", () => null).map((r) => (r.name === "fleet-router-host-router-process" ? { ...r, props: {} } : r));
      expect(messages("router-after-preflight", skipped)).to.deep.equal([]);
    });

    it("rejects a preflight of another fleet document", () => {
      const other = "sha256:" + "1".repeat(64);
      const [message] = messages("router-after-preflight", edited("fleet-preflight", (p) => ({ ...p, fleetDocumentDigest: other })));
      expect(message).to.match(/^router fleet-router-host-router-process serves fleet document sha256:[0-9a-f]{64}, but preflight fleet-preflight judged sha256:1{64}\. Fix: run `pulumi up` so the preflight judges the current document before the router restarts\.$/);
    });

    it("rejects a failing preflight; a degraded one only without allowDegradedPreflight", () => {
      const gates = (p: Record<string, unknown>, verdict: string) => (p["gates"] as Array<Record<string, unknown>>).map((g) => (g["gate"] === "slo" ? { ...g, verdict } : g));
      expect(messages("router-after-preflight", edited("fleet-preflight", (p) => ({ ...p, gates: gates(p, "fail") })))).to.deep.equal([
        "router fleet-router-host-router-process: preflight fleet-preflight failed (slo=fail). Fix: resolve the failing gates (see the preflight's evidence record) and run `pulumi up`.",
      ]);
      const degraded = edited("fleet-preflight", (p) => ({ ...p, gates: gates(p, "skip") }));
      expect(messages("router-after-preflight", degraded)).to.deep.equal([
        "router fleet-router-host-router-process: preflight fleet-preflight is degraded (slo=skip). Fix: make every gate pass and run `pulumi up`, or accept a degraded preflight with the policy config allowDegradedPreflight: true.",
      ]);
      expect(messages("router-after-preflight", degraded, { ...CONFIG, allowDegradedPreflight: true })).to.deep.equal([]);
    });
  });

  describe("adopted-digests", () => {
    it("rejects a profile adopted from a store without its SHA-256", () => {
      const adopted = edited("fleet-profiles-p1", (p) => ({ ...p, adoption: { verdict: "adopted", reason: "", source: { storePath: "/srv/profiles.json", storeSha256: "", samplesPath: "", samplesSha256: "" } } }));
      expect(messages("adopted-digests", adopted)).to.deep.equal([
        "engine p1: profile fleet-profiles-p1 adopted a profile store (/srv/profiles.json) without its SHA-256. Fix: set narwhal-fleet:profiling.adopt.sha256 to the store's `sha256:<hex>` and run `pulumi up`.",
      ]);
    });
  });

  describe("secret-config", () => {
    it("rejects a secret key stored in plaintext, accepts encrypted values and objects of them", () => {
      const config = (c: Record<string, unknown>): PolicyOptions => ({ stackConfig: { path: "Pulumi.policy.yaml", config: c } });
      expect(messages("secret-config", [], config({ "narwhal-fleet:engineApiKey": "hunter2", "narwhal-fleet:model": { servedName: "m" } }))).to.deep.equal([
        "secret config: narwhal-fleet:engineApiKey in Pulumi.policy.yaml holds a plain value. Fix: `pulumi config set --secret engineApiKey <value>` (for an object key, `--secret --path 'engineApiKey.<name>'` for each entry), then rotate the value that was stored in plaintext.",
      ]);
      expect(messages("secret-config", [], config({ "narwhal-fleet:sshPasswords": { sim11: SECURE, sim12: "pw" } }))).to.have.length(1);
      expect(messages("secret-config", [], config({ "narwhal-fleet:sshPasswords": { sim11: SECURE }, "narwhal-fleet:engineApiKey": SECURE }))).to.deep.equal([]);
    });

    it("judges every key the stack config reads as a secret, and no other", () => {
      const config = (c: Record<string, unknown>): PolicyOptions => ({ stackConfig: { path: "Pulumi.policy.yaml", config: c } });
      for (const key of SECRET_CONFIG_KEYS) expect(messages("secret-config", [], config({ [`narwhal-fleet:${key}`]: "plain" })), key).to.have.length(1);
      expect(messages("secret-config", [], config({ "narwhal-fleet:sshPrivateKeyFile": "keys/id_ed25519" }))).to.deep.equal([]);
    });

    it("fails closed when the stack file cannot be read", () => {
      expect(messages("secret-config", [], { stackConfig: { path: "Pulumi.x.yaml", error: "ENOENT" } })).to.deep.equal([
        "secret config: Pulumi.x.yaml could not be read (ENOENT). Fix: make the stack file readable and run again.",
      ]);
    });
  });
});
