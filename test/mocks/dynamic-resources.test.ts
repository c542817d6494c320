/**
 * The registration every dynamic resource's existing state depends on: its type token, the provider
 * module its `__provider` shim names, the outputs it registers and the fields kept secret; and the
 * declaration helper's rules (every output listed, secrets and aliases merged after the caller's).
 */
import { expect } from "chai";
import * as fs from "node:fs";
import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { dynamicResource } from "../../dynamic-providers/declare";
import { PROVIDER_TEXT, providerShim } from "../../dynamic-providers/shim";
import type { CommandRecordInputs, CommandRecordOutputs } from "../../dynamic-providers/command-record/check";
import { settle } from "./support/fleet";

const ROOT = path.resolve(__dirname, "../..");

/** Fields that hold credentials, per type: state must keep them encrypted. */
const SECRETS: Record<string, string[]> = {
  Attestation: [],
  CacheCapture: ["apiKey", "privateKey", "password"],
  Calibration: ["apiKey", "viaPrivateKey", "viaPassword"],
  CommandRecord: [],
  DeploymentConfig: [],
  EngineDrain: ["credentials"],
  FilesPresence: ["credentials"],
  EngineGeneration: ["apiKey"],
  FabricEdge: ["sourcePrivateKey", "sourcePassword", "destinationPrivateKey", "destinationPassword"],
  FabricGate: [],
  HostDiscovery: ["privateKey", "password"],
  ImageCheck: ["privateKey", "password"],
  InstallPresence: ["credentials"],
  Liveness: [],
  LoadTrial: ["viaPrivateKey", "viaPassword", "hostPrivateKeys", "hostPasswords"],
  PeerWave: ["credentials", "apiKey"],
  Preflight: ["apiKey", "viaPrivateKey", "viaPassword", "engineHostSecrets"],
  Profile: ["apiKey", "viaPrivateKey", "viaPassword"],
  ProfileStore: ["routerPrivateKey", "routerPassword"],
  ReplicaAgreement: [],
};

interface Seen {
  type: string;
  inputs: Record<string, unknown>;
  opts: pulumi.CustomResourceOptions;
}

describe("mocks: dynamic resource declarations", () => {
  const seen = new Map<string, Seen>();
  let scope: pulumi.ComponentResource;

  before(async () => {
    await pulumi.runtime.setMocks(
      {
        newResource(a) {
          // The provider fills every registered output (empty ones never reach the engine); here with its own name.
          const registered = Object.keys(seen.get(a.name)?.inputs ?? {});
          const filled = Object.fromEntries(registered.map((k) => [k, a.inputs[k] ?? `filled:${k}`]));
          return { id: `${a.name}-id`, state: { ...a.inputs, ...filled } };
        },
        call: (a) => a.inputs,
      },
      "narwhal-fleet",
      "mock",
      false,
    );
    // A parent whose transformation sees each child's type, props and options as the SDK registers them.
    scope = new pulumi.ComponentResource("test:index:Scope", "scope", {}, {
      transformations: [
        (a) => {
          seen.set(a.name, { type: a.type, inputs: a.props, opts: a.opts });
          return undefined;
        },
      ],
    });
  });

  const modules = fs.readdirSync(path.join(ROOT, "dynamic-providers")).filter((d) => fs.existsSync(path.join(ROOT, "dynamic-providers", d, "resource.ts")));

  it("finds every resource module", () => {
    expect(modules).to.have.length(Object.keys(SECRETS).length);
  });

  for (const dir of modules) {
    it(`${dir}: keeps its type token, provider module, outputs and secrets`, async () => {
      const exported = require(path.join(ROOT, "dynamic-providers", dir, "resource")) as Record<string, unknown>;
      const classes = Object.entries(exported).filter(([, v]) => typeof v === "function" && (v as { prototype?: unknown }).prototype instanceof pulumi.CustomResource);
      expect(classes).to.have.length(1);
      const [className, Resource] = classes[0] as [string, new (name: string, args: object, opts?: pulumi.CustomResourceOptions) => pulumi.CustomResource];
      const name = `r-${dir}`;
      const r = new Resource(name, { stack: "mock" }, { parent: scope, additionalSecretOutputs: ["callerSecret"] });
      const s = seen.get(name)!;

      expect(s.type).to.equal(`pulumi-nodejs:dynamic/narwhal:${className}`);
      expect(s.inputs.__implementation).to.equal(`dynamic-providers/${dir}/provider.ts`);
      // Every type shares the one shim, a reference to the installed package, which loads the module the resource names.
      expect(s.inputs.__provider).to.equal(PROVIDER_TEXT).and.contain('require("narwhal-fleet-provider-shim').and.not.contain("dynamic-providers/" + dir);
      expect(s.opts.additionalSecretOutputs).to.deep.equal(["callerSecret", ...SECRETS[className]]);

      // Each registered output is a property of the resource, resolved from the provider's state.
      const outputs = Object.keys(s.inputs).filter((k) => k !== "__provider" && k !== "__implementation" && k !== "stack");
      expect(outputs).to.not.be.empty;
      for (const k of outputs) expect(await settle((r as unknown as Record<string, pulumi.Output<unknown>>)[k])).to.equal(`filled:${k}`);
      expect(await settle((r as unknown as { stack: pulumi.Output<string> }).stack)).to.equal("mock");
    });
  }

  it("__provider is the text the SDK's own dynamic resource serialises for the shim, so existing states see no change", async () => {
    class Probe extends pulumi.dynamic.Resource {}
    new Probe(providerShim, "sdk-serialised", {}, { parent: scope }, "narwhal", "Probe");
    const serialised = await settle(pulumi.output(seen.get("sdk-serialised")!.inputs.__provider) as pulumi.Output<string>);
    expect(PROVIDER_TEXT).to.equal(serialised);
  });

  it("Liveness keeps the EngineLiveness alias after the caller's own", async () => {
    const { Liveness } = await import("../../dynamic-providers/liveness/resource");
    new Liveness("alias-check", {} as never, { parent: scope, aliases: [{ name: "older" }] });
    expect(seen.get("alias-check")!.opts.aliases).to.deep.equal([{ name: "older" }, { type: "pulumi-nodejs:dynamic/narwhal:EngineLiveness" }]);
  });

  it("refuses, at compile time, an outputs list that misses an output or names an input, and a secret that is no field", () => {
    const declare = dynamicResource<CommandRecordInputs, CommandRecordOutputs>();
    // @ts-expect-error: `evidence` is missing from the outputs.
    declare({ type: "T", provider: "p", outputs: ["recordedAt"] });
    // @ts-expect-error: `stack` is an input, not an output create adds.
    declare({ type: "T", provider: "p", outputs: ["recordedAt", "evidence", "stack"] });
    // @ts-expect-error: no field `token`.
    declare({ type: "T", provider: "p", outputs: ["recordedAt", "evidence"], secretOutputs: ["token"] });
    const Whole = declare({ type: "T", provider: "p", outputs: ["recordedAt", "evidence"] });
    expect(Whole.provider).to.have.property("create");
  });
});
