/**
 * HostDiscovery provider methods, loaded at call time by resource.ts (see dynamic-providers/load.ts).
 * create: one SSH login, one probe script; read: the same probe, so `pulumi refresh` and
 * `preview --refresh` see a changed host; delete: nothing remote (discovery leaves nothing behind).
 */
import type * as pulumi from "@pulumi/pulumi";
import { withSsh } from "../../lib/ssh/client";
import { PROBE_SCRIPT, splitSections } from "../../lib/discovery/probe";
import { inventoryFrom } from "../../lib/discovery/accelerators";
import { chooseFabricAddress, parseGlobalAddresses } from "../../lib/discovery/fabric-address";
import { sha256Json } from "../../lib/digest";
import { diffInputs } from "../diff";
import type { HostDiscoveryInputs, HostDiscoveryOutputs } from "./types";

/** Inputs whose change means the old observation no longer describes the host. */
const MEASURED_AGAINST = ["host", "port", "user", "pinnedHostKey", "fabricInterface", "fabricAddressChoice"] as const;
/** Inputs that only change how we log in. */
const ACCESS_ONLY = ["privateKey", "password", "allowFirstContact", "connectTimeoutS"] as const;

async function observe(inputs: HostDiscoveryInputs): Promise<HostDiscoveryOutputs> {
  const startedAt = new Date().toISOString();
  return withSsh(
    {
      alias: inputs.alias,
      host: inputs.host,
      port: inputs.port,
      user: inputs.user,
      privateKey: inputs.privateKey,
      password: inputs.password,
      hostKey: inputs.pinnedHostKey ?? inputs.recordedHostKey,
      allowFirstContact: inputs.allowFirstContact,
      connectTimeoutS: inputs.connectTimeoutS,
    },
    async (ssh) => {
      const raw = await ssh.run(`sh -s -- '${inputs.fabricInterface.replace(/'/g, "")}'`, {
        stdin: PROBE_SCRIPT,
        timeoutS: 60,
        name: "discovery probe",
      });
      const sections = splitSections(raw);
      const accelerators = inventoryFrom(sections);
      const fabricAddress = chooseFabricAddress(
        inputs.alias,
        inputs.fabricInterface,
        parseGlobalAddresses(sections.fabric ?? ""),
        inputs.fabricAddressChoice,
      );
      const facts = {
        hostname: (sections.hostname ?? "").trim(),
        hostKey: ssh.hostKey.line,
        hostKeyFingerprint: ssh.hostKey.fingerprint,
        accelerators,
        fabricAddress,
      };
      return { ...inputs, ...facts, factsDigest: sha256Json(facts), observedAt: startedAt };
    },
  );
}

export const provider: pulumi.dynamic.ResourceProvider = {
  async create(inputs: HostDiscoveryInputs) {
    const outs = await observe(inputs);
    return { id: `${inputs.alias}-${outs.factsDigest.slice(7, 19)}`, outs };
  },

  async diff(_id: string, olds: HostDiscoveryOutputs, news: HostDiscoveryInputs) {
    return diffInputs(olds, news, MEASURED_AGAINST, ACCESS_ONLY);
  },

  async update(_id: string, olds: HostDiscoveryOutputs, news: HostDiscoveryInputs) {
    // Only access settings changed: the observation stands.
    return { outs: { ...olds, ...news } };
  },

  async read(id: string, props: HostDiscoveryOutputs) {
    // Re-observe with the key recorded at first contact, so a changed key fails here with both fingerprints.
    const outs = await observe({ ...props, recordedHostKey: props.hostKey });
    return { id, props: { ...outs, observedAt: outs.factsDigest === props.factsDigest ? props.observedAt : outs.observedAt } };
  },
};
