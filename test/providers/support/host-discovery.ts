/** The discovery provider's inputs for a simulated host, as the fleet gives them, for the provider tests. */
import * as fs from "node:fs";
import type { HostDiscoveryInputs } from "../../../dynamic-providers/host-discovery/schema";
import type { SimHost } from "../../../sim/hosts";
import { rejection } from "../../support/rejection";

export function discoveryInputs(h: SimHost, extra: Partial<HostDiscoveryInputs> = {}): HostDiscoveryInputs {
  return {
    alias: h.alias,
    host: h.address,
    port: h.sshPort,
    user: h.user,
    privateKey: fs.readFileSync(h.privateKeyPath, "utf8"),
    pinnedHostKey: h.hostKey,
    allowFirstContact: false,
    connectTimeoutS: 10,
    maxSessions: 4,
    fabricInterface: h.fabricInterface,
    modelDir: h.modelDir,
    runtimeRef: { kind: "native", vllmCommand: "vllm" },
    devicePaths: [],
    plannedPorts: [],
    policyDigest: "sha256:" + "0".repeat(64),
    stack: "provider-tests",
    stateDir: "/var/lib/narwhal-fleet",
    ...extra,
  };
}

/** The whole message discovery refused with, the line naming its kept failed attempt included. */
export async function discoveryRefusal(p: Promise<unknown>): Promise<string> {
  return (await rejection(p, "discovery to fail")).message;
}

/**
 * The message discovery refused with, without the line naming the kept failed attempt (asserted on its
 * own in host-discovery.test.ts): every refusal ends with it.
 */
export async function discoveryFailure(p: Promise<unknown>): Promise<string> {
  const message = await discoveryRefusal(p);
  const [first, ...rest] = message.split("\nthe failed attempt is kept as ");
  if (rest.length !== 1 || !/^discovery\/[0-9a-f]{64}\.json$/.test(rest[0])) throw new Error(`discovery failed without naming its kept attempt: ${message}`);
  return first;
}
