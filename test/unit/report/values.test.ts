import { expect } from "chai";
import { renderValue, sameValue } from "../../../lib/report/values";
import { UNKNOWN } from "../../../lib/unknown";
import { evidenceKind } from "../../../lib/report/kinds";

const secret = { "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", ciphertext: "[secret]" };

describe("preview report: values and kinds", () => {
  it("prints secrets as [secret], unknowns as known after apply, short scalars as themselves and structures as digests", () => {
    expect(renderValue(secret)).to.equal("[secret]");
    expect(renderValue(UNKNOWN)).to.equal("(known after apply)");
    expect(renderValue("sha256:" + "a".repeat(64))).to.equal("sha256:" + "a".repeat(64));
    expect(renderValue(1.5)).to.equal("1.5");
    expect(renderValue(undefined)).to.equal("(none)");
    expect(renderValue("x".repeat(200))).to.match(/^sha256:[0-9a-f]{16} \(200 chars\)$/);
    expect(renderValue({ b: 1, a: 2 })).to.equal(renderValue({ a: 2, b: 1 }));
    expect(renderValue({ a: UNKNOWN })).to.match(/partly known after apply/);
    // A structure holding a secret is digested with the secret's marker, never its ciphertext.
    expect(renderValue({ login: "root", key: secret })).to.equal(renderValue({ login: "root", key: { ...secret, ciphertext: "other" } }));
  });

  it("compares values as the engine showed them", () => {
    expect(sameValue({ a: [1, 2] }, { a: [1, 2] })).to.equal(true);
    expect(sameValue({ a: [1, 2] }, { a: [2, 1] })).to.equal(false);
    expect(sameValue(secret, { ...secret, ciphertext: "v2" })).to.equal(true);
  });

  it("names the kind and gate of generic resources by the component they sit in", () => {
    const engineUrn = (type: string, name: string) => `urn:pulumi:s::narwhal-fleet::narwhal:fleet:Fleet$narwhal:engine:Engine$${type}::${name}`;
    expect(evidenceKind("command:remote:Command", engineUrn("command:remote:Command", "fleet-e1-process"), "fleet-e1-process", true)).to.deep.equal({ kind: "engine process", gate: "C" });
    expect(evidenceKind("docker:index/container:Container", engineUrn("docker:index/container:Container", "fleet-e1-container"), "fleet-e1-container", true)).to.deep.equal({ kind: "engine container", gate: "C" });
    const sidecar = "urn:pulumi:s::narwhal-fleet::narwhal:fleet:Fleet$narwhal:attestation:AttestationMesh$command:remote:Command::fleet-attestation-e1-sidecar";
    expect(evidenceKind("command:remote:Command", sidecar, "fleet-attestation-e1-sidecar", true)).to.deep.equal({ kind: "attestation sidecar", gate: "E" });
    const routerUrn = (name: string) => `urn:pulumi:s::narwhal-fleet::narwhal:fleet:Fleet$narwhal:router:RouterHost$narwhal:router:Router$command:remote:Command::${name}`;
    expect(evidenceKind("command:remote:Command", routerUrn("fleet-router-host-router-front"), "fleet-router-host-router-front", true)).to.deep.equal({ kind: "router front", gate: "G" });
    expect(evidenceKind("command:remote:Command", routerUrn("fleet-router-host-router-process"), "fleet-router-host-router-process", true)).to.deep.equal({ kind: "router process", gate: "G" });
    expect(evidenceKind("pulumi:providers:command", "urn:pulumi:s::p::pulumi:providers:command::default", "default", true)).to.equal(undefined);
    expect(evidenceKind("narwhal:engine:Engine", engineUrn("narwhal:engine:Engine", "fleet-e1"), "fleet-e1", false)).to.equal(undefined);
  });

  it("names one liveness type by what it watches: an engine (Gate C), the router or monitoring (Gate G)", () => {
    const type = "pulumi-nodejs:dynamic/narwhal:Liveness";
    const urn = (chain: string, name: string) => `urn:pulumi:s::narwhal-fleet::narwhal:fleet:Fleet$${chain}$${type}::${name}`;
    expect(evidenceKind(type, urn("narwhal:engine:Engine", "fleet-e1-liveness"), "fleet-e1-liveness", true)).to.deep.equal({ kind: "engine liveness", gate: "C" });
    expect(evidenceKind(type, urn("narwhal:router:Router", "fleet-router-liveness"), "fleet-router-liveness", true)).to.deep.equal({ kind: "router liveness", gate: "G" });
    expect(evidenceKind(type, urn("narwhal:observability:Monitoring", "fleet-monitoring-prometheus-liveness"), "fleet-monitoring-prometheus-liveness", true)).to.deep.equal({
      kind: "monitoring liveness",
      gate: "G",
    });
  });
});
