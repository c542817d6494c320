/**
 * examples/consumer as another team would use it: its own project, reading the converged shared fleet
 * through a StackReference in the same backend with the same passphrase, through the real CLI.
 */
import { expect } from "chai";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { LocalWorkspace, PulumiCommand, type Stack } from "@pulumi/pulumi/automation";
import type { EngineIdentityOutput } from "../../lib/fleet/stack-outputs";
import { API_KEY, PROJECT_ROOT, sharedFleet } from "./support/stack";

const CONSUMER_DIR = path.join(PROJECT_ROOT, "examples", "consumer");
const CONSUMER_PROJECT = "narwhal-fleet-consumer";
// Pulumi.e2e*.yaml is ignored by git, like the fleet's own e2e stack files.
const CONSUMER_STACK = "e2e-consumer";
const DIGEST = /^sha256:[0-9a-f]{64}$/;

describe("e2e: a consumer stack reads the fleet's outputs", function () {
  this.timeout(1_200_000);
  let consumer: Stack | undefined;

  after(async () => {
    if (!consumer) return;
    await consumer.destroy({ onOutput: () => undefined });
    await consumer.workspace.removeStack(CONSUMER_STACK);
  });

  it("reads the router URL, every engine's digests and the engine API key, which stays a secret", async () => {
    const { stack, engines } = await sharedFleet();
    const fleet = await stack.outputs();
    const cli = await PulumiCommand.get({ root: path.join(PROJECT_ROOT, ".tools"), skipVersionCheck: false });
    consumer = await LocalWorkspace.createOrSelectStack({ stackName: CONSUMER_STACK, workDir: CONSUMER_DIR }, { pulumiCommand: cli });
    await consumer.setConfig("fleetStack", { value: `organization/narwhal-fleet/${stack.name}` });
    const { outputs } = await consumer.up({ onOutput: () => undefined });

    expect(outputs.routerUrl).to.deep.equal({ value: fleet.routerUrl.value, secret: false });
    expect(outputs.routerUrl.value).to.match(/^http:\/\/198\.18\.0\.\d+:8321$/);
    expect(outputs.modelsUrl.value).to.equal(`${fleet.routerUrl.value}/v1/models`);

    const identities = fleet.engineIdentities.value as Record<string, EngineIdentityOutput>;
    const generations = fleet.engines.value as Record<string, { generationDigest: string }>;
    const digests = outputs.engineDigests.value as Record<string, { host: string; role: string; generation: string; attestation: string; profile: string }>;
    expect(outputs.engineDigests.secret).to.equal(false);
    expect(Object.keys(digests).sort()).to.deep.equal(engines.map((e) => e.id).sort());
    for (const e of engines) {
      const got = digests[e.id];
      const own = identities[e.id];
      expect(got, e.id).to.deep.equal({ host: e.host, role: own.role, generation: own.generationDigest, attestation: own.attestationDigest, profile: own.profileDigest });
      expect(got.generation, `${e.id} generation`).to.equal(generations[e.id].generationDigest);
      for (const d of [got.generation, got.attestation, got.profile]) expect(d, e.id).to.match(DIGEST);
    }

    // Secret in the consumer's outputs, as in the fleet's...
    expect(outputs.engineApiKey).to.deep.equal({ value: API_KEY, secret: true });
    const shown = execFileSync(path.join(PROJECT_ROOT, ".tools/bin/pulumi"), ["stack", "output", "engineApiKey", "--stack", CONSUMER_STACK], { cwd: CONSUMER_DIR, encoding: "utf8" });
    expect(shown.trim()).to.equal("[secret]");
    // ...and only ciphertext in the consumer's state as it rests in the backend (the Automation API's
    // export would decrypt it), both in the stack's outputs and in the StackReference's copy.
    const stateFile = path.join(PROJECT_ROOT, ".state/.pulumi/stacks", CONSUMER_PROJECT, `${CONSUMER_STACK}.json`);
    const atRest = fs.readFileSync(stateFile, "utf8");
    expect(atRest).not.to.include(API_KEY);
    const resources = (JSON.parse(atRest) as { checkpoint: { latest: { resources: Array<{ type: string; outputs?: Record<string, any> }> } } }).checkpoint.latest.resources;
    const root = resources.find((r) => r.type === "pulumi:pulumi:Stack")!;
    const reference = resources.find((r) => r.type === "pulumi:pulumi:StackReference")!;
    expect(root.outputs!.engineApiKey).to.have.property("ciphertext");
    expect(reference.outputs!.outputs.engineApiKey).to.have.property("ciphertext");
    expect(root.outputs!.routerUrl).to.equal(fleet.routerUrl.value);
  });
});
