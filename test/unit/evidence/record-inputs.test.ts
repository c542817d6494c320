import { expect } from "chai";
import { schemaFailures } from "../../../dynamic-providers/evidence-provider";
import { UNKNOWN } from "../../../lib/unknown";
import { discoveryInputs } from "../../../dynamic-providers/host-discovery/schema";
import { commandRecordInputs } from "../../../dynamic-providers/command-record/check";
import { deploymentConfigInputs } from "../../../dynamic-providers/deployment-config/check";
import { fabricGateInputs } from "../../../dynamic-providers/fabric-gate/check";
import { livenessInputs } from "../../../dynamic-providers/liveness/check";

const DIGEST = `sha256:${"a".repeat(64)}`;

describe("input checks of the records that had none: discovery, command record, deployment config, fabric gate, liveness", () => {
  const discovery = {
    alias: "gpu-a",
    host: "10.0.0.1",
    port: 22,
    user: "root",
    connectTimeoutS: 30,
    maxSessions: 4,
    fabricInterface: "fab0",
    modelDir: "/models/m",
    devicePaths: [],
    plannedPorts: [],
    policyDigest: DIGEST,
    stack: "dev",
    stateDir: "/var/lib/narwhal-fleet",
    allowFirstContact: true,
  };

  it("accepts what the program hands discovery, and lets values a preview does not know through", () => {
    expect(schemaFailures(discoveryInputs, discovery)).to.deep.equal([]);
    expect(schemaFailures(discoveryInputs, { ...discovery, host: UNKNOWN, policyDigest: UNKNOWN })).to.deep.equal([]);
  });

  it("refuses a stack or stateDir that could not name the folder a destroy removes, naming each property", () => {
    expect(schemaFailures(discoveryInputs, { ...discovery, stack: "..", stateDir: "var/lib", port: 0 })).to.deep.equal([
      { property: "port", reason: "port must be a port from 1 to 65535, got 0" },
      { property: "stack", reason: 'stack must be a stack name that can name a folder (letters, digits, "_", "." or "-"), got ".."' },
      { property: "stateDir", reason: 'stateDir must be an absolute path, got "var/lib"' },
    ]);
  });

  it("refuses a command record whose steps could not name their artifacts", () => {
    const record = { stack: "dev", kind: "install", hostAlias: "gpu-a", steps: [{ name: "install", script: "true", stdout: "{}" }], observations: {} };
    expect(schemaFailures(commandRecordInputs, record)).to.deep.equal([]);
    expect(schemaFailures(commandRecordInputs, { ...record, steps: UNKNOWN })).to.deep.equal([]);
    expect(schemaFailures(commandRecordInputs, { ...record, kind: "deploy", steps: [{ name: "../x", script: "true", stdout: 1 }] })).to.deep.equal([
      { property: "kind", reason: 'kind must be "install" or "router", got "deploy"' },
      { property: "steps", reason: 'steps[].name must be a lowercase word (it names the step\'s artifacts), got "../x"' },
      { property: "steps", reason: 'steps["../x"].stdout must be text' },
    ]);
  });

  it("refuses a deployment config file name with a folder in it", () => {
    expect(schemaFailures(deploymentConfigInputs, { stack: "dev", files: { "fleet.json": "{}", "deployment.env": "" } })).to.deep.equal([]);
    expect(schemaFailures(deploymentConfigInputs, { stack: "dev", files: { "../escape": "x", ".hidden": "y" } })).to.deep.equal([
      { property: "files", reason: 'files: "../escape" is not a plain file name (letters, digits, "_", "-", "." and no folder)' },
      { property: "files", reason: 'files: ".hidden" is not a plain file name (letters, digits, "_", "-", "." and no folder)' },
    ]);
  });

  it("refuses a fabric gate edge without the digest of its record", () => {
    const edge = (id: string, digest: unknown) => ({ id, evidence: { relativePath: "r.json", digest } });
    expect(schemaFailures(fabricGateInputs, { stack: "dev", hosts: ["a", "b"], edges: [edge("a->b", DIGEST)] })).to.deep.equal([]);
    expect(schemaFailures(fabricGateInputs, { stack: "dev", hosts: ["a", ""], edges: [edge("a->b", "md5:1")] })).to.deep.equal([
      { property: "hosts", reason: "hosts must be a list of host aliases" },
      { property: "edges", reason: `edges["a->b"].evidence must name the edge's record by its sha256 digest` },
    ]);
  });

  it("refuses a liveness probe of a service it does not know, or with no deadline", () => {
    const probe = { service: "router", name: "router", hostAlias: "gpu-a", url: "http://[fd00::1]:8321", healthDeadlineS: 10 };
    expect(schemaFailures(livenessInputs, probe)).to.deep.equal([]);
    expect(schemaFailures(livenessInputs, { ...probe, url: UNKNOWN })).to.deep.equal([]);
    expect(schemaFailures(livenessInputs, { ...probe, service: "redis", healthDeadlineS: 0 })).to.deep.equal([
      { property: "service", reason: 'service must be "engine" or "router" or "prometheus" or "grafana" or "freshness", got "redis"' },
      { property: "healthDeadlineS", reason: "healthDeadlineS must be a positive number of seconds, got 0" },
    ]);
  });
});
