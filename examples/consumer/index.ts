/**
 * A stack that uses the fleet: it reads the fleet stack's outputs through a StackReference and
 * re-exports what a client of the fleet needs. Modules resolve from the repository's node_modules
 * (Node looks in parent folders); package.json is here only so Pulumi runs this index.ts and not the
 * fleet program's, which the nearest package.json would otherwise name.
 */
import * as pulumi from "@pulumi/pulumi";
import type { EngineIdentityOutput } from "../../lib/fleet/stack-outputs";

const config = new pulumi.Config();
const fleet = new pulumi.StackReference(config.require("fleetStack"));

/** Where clients send requests. */
export const routerUrl = fleet.requireOutput("routerUrl") as pulumi.Output<string>;
/** The OpenAI-compatible model list behind that URL. */
export const modelsUrl = routerUrl.apply((url) => `${url}/v1/models`);

/** Per engine: the digests a client pins to know it talks to the fleet that was measured. */
export const engineDigests = (fleet.requireOutput("engineIdentities") as pulumi.Output<Record<string, EngineIdentityOutput>>).apply((engines) =>
  Object.fromEntries(
    Object.values(engines).map((e) => [e.id, { host: e.host, role: e.role, generation: e.generationDigest, attestation: e.attestationDigest, profile: e.profileDigest }]),
  ),
);

/** Still a secret here: a StackReference keeps the fleet's secret outputs secret. */
export const engineApiKey = fleet.requireOutput("engineApiKey") as pulumi.Output<string>;
