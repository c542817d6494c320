/** `narwhal-fleet:engines[]`: one vLLM engine. */
import { ENGINE_PORT_BASE, RUNBOOK_DEFAULTS as R } from "../defaults";
import * as f from "../fields";
import * as fmt from "../formats";
import { EngineOverridesSchema } from "./launch";

/**
 * An engine's schema depends on its index: default role and ports are derived from it. `defaultText`
 * says so in docs/config.md, which is generated from the schema of the first engine.
 */
export function engineSchema(index: number) {
  return f.strict(
    {
      id: f.matching(fmt.ENGINE_ID_PATTERN, fmt.ENGINE_ID_RULE).describe("Narwhal engine iid, unique in the fleet."),
      host: f.text("the alias of a host in hosts").describe("Alias of the host the engine runs on."),
      gpuIds: f
        .list(f.num({ int: true, min: 0 }), "a list of GPU indices, e.g. [0, 1]", {
          min: 1,
          unique: true,
        })
        .optional()
        .meta({
          description: "GPU indices the engine gets. Engines that share a host must each list theirs, disjoint.",
          defaultText: "every GPU discovery finds on its host",
        }),
      role: f
        .choice(["prefill", "decode"])
        .default(index === 0 ? R.roles.first : R.roles.rest)
        .meta({ description: "Initial pool.", defaultText: "`prefill` for the first engine, `decode` for the rest" }),
      pin: f.flag().default(false).describe("Keep the engine in its initial pool (the controller never moves it)."),
      port: f
        .port()
        .default(ENGINE_PORT_BASE.port + index)
        .meta({ description: "vLLM HTTP port.", defaultText: `${ENGINE_PORT_BASE.port} + the engine's index` }),
      attestationPort: f
        .port()
        .default(ENGINE_PORT_BASE.attestationPort + index)
        .meta({ description: "Attestation sidecar port.", defaultText: `${ENGINE_PORT_BASE.attestationPort} + the engine's index` }),
      nixlPort: f
        .port()
        .default(ENGINE_PORT_BASE.nixlPort + index)
        .meta({ description: "NIXL side-channel port (`VLLM_NIXL_SIDE_CHANNEL_PORT`).", defaultText: `${ENGINE_PORT_BASE.nixlPort} + the engine's index` }),
      transferPortRange: f
        .text('a port range "lo-hi"', fmt.portRangeProblem)
        .optional()
        .meta({ description: "This engine's UCX TCP port range, `lo-hi`.", defaultText: "`launch.ucxTcpPortRange`" }),
      overrides: EngineOverridesSchema.optional().describe("Per-engine launch policy over `launch`; each key unset here takes the fleet's."),
      runbookRun: f
        .text("an absolute path to a runbook launch directory on the engine's host", (s) => fmt.absolutePathProblem(s, "/srv/runbook/runs/engine-launch-20260101T000000Z-4242"))
        .optional()
        .describe(
          "The runbook launch directory (`ENGINE_RUN`) on the engine's host this engine was started from: a running " +
            "engine there whose plan equals this one's is adopted instead of restarted (native and docker-cli runtimes; " +
            "see [coming-from-the-runbook.md](coming-from-the-runbook.md)).",
        ),
    },
    "an engine object {id, host, ...}",
  );
}
