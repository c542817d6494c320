import * as pulumi from "@pulumi/pulumi";
import type { MemberRecord, Restart } from "../../lib/engine/peer-wave";
import { providerShim } from "../shim";
import type { PeerWaveInputs, PeerWaveOutputs } from "./types";

export type PeerWaveArgs = { [K in keyof PeerWaveInputs]: pulumi.Input<PeerWaveInputs[K]> };

export const peerWaveProvider = providerShim("dynamic-providers/peer-wave/provider.ts");

/**
 * `runtime.restartKvPeers`: one per KV component, between the engines' runtimes and their generations.
 * A refresh that finds a member restarted (or an up that starts one anew) makes it an update, which
 * restarts every other member at once before any generation is proved again (vLLM #38840).
 */
export class PeerWave extends pulumi.dynamic.Resource {
  declare readonly recorded: pulumi.Output<Record<string, MemberRecord>>;
  declare readonly lastWave: pulumi.Output<{ at: string; restarted: Restart[]; wave: string[] } | undefined>;

  constructor(name: string, args: PeerWaveArgs, opts?: pulumi.CustomResourceOptions) {
    const outputs: Record<keyof Omit<PeerWaveOutputs, keyof PeerWaveInputs>, undefined> = { recorded: undefined, observedStarts: undefined, lastWave: undefined };
    super(peerWaveProvider, name, { ...outputs, ...args }, pulumi.mergeOptions(opts, { additionalSecretOutputs: ["credentials", "apiKey"] }), "narwhal", "PeerWave");
  }
}
