/** `narwhal-fleet:engines[]`: one vLLM engine. */
import { ENGINE_PORT_BASE, RUNBOOK_DEFAULTS as R } from "../defaults";
import * as f from "../fields";
import * as fmt from "../formats";
import { EngineOverridesSchema } from "./launch";

/** An engine's schema depends on its index: default role and ports are derived from it. */
export function engineSchema(index: number) {
  return f.strict(
    {
      /** Narwhal engine iid, unique in the fleet. */
      id: f.matching(fmt.ENGINE_ID_PATTERN, fmt.ENGINE_ID_RULE),
      /** Alias of the host the engine runs on. */
      host: f.text("the alias of a host in hosts"),
      /**
       * GPU indices the engine gets. Without them it takes every GPU discovery finds on its host, so
       * engines that share a host must each list theirs, disjoint.
       */
      gpuIds: f
        .list(f.num({ int: true, min: 0 }), "a list of GPU indices, e.g. [0, 1]", {
          min: 1,
          unique: true,
        })
        .optional(),
      /** Initial pool; default prefill for the first engine, decode for the rest. */
      role: f.choice(["prefill", "decode"]).default(index === 0 ? R.roles.first : R.roles.rest),
      /** Keep the engine in its initial pool (the controller never moves it). */
      pin: f.flag().default(false),
      /** vLLM HTTP port; default 8100 + index. */
      port: f.port().default(ENGINE_PORT_BASE.port + index),
      /** Attestation sidecar port; default 8200 + index. */
      attestationPort: f.port().default(ENGINE_PORT_BASE.attestationPort + index),
      /** NIXL side-channel port (VLLM_NIXL_SIDE_CHANNEL_PORT); default 5600 + index. */
      nixlPort: f.port().default(ENGINE_PORT_BASE.nixlPort + index),
      /** This engine's UCX TCP port range, `"lo-hi"`; default `launch.ucxTcpPortRange`. */
      transferPortRange: f.text('a port range "lo-hi"', fmt.portRangeProblem).optional(),
      /** Per-engine launch policy, over `launch`. */
      overrides: EngineOverridesSchema.optional(),
      /**
       * The runbook launch directory (`ENGINE_RUN`) on the engine's host this engine was started from:
       * a running engine there whose plan equals this one's is adopted instead of restarted (native runtime).
       */
      runbookRun: f
        .text("an absolute path to a runbook launch directory on the engine's host", (s) => fmt.absolutePathProblem(s, "/srv/runbook/runs/engine-launch-20260101T000000Z-4242"))
        .optional(),
    },
    "an engine object {id, host, ...}",
  );
}
