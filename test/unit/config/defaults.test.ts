/** A minimal config parses, and every default lands exactly where the runbook and the program say. */
import { expect } from "chai";
import { RUNBOOK_DEFAULTS } from "../../../lib/config/defaults";
import { accepted, minimal } from "./fixtures";

describe("config: defaults", () => {
  it("fills every default of a minimal config", () => {
    // The whole spec is compared, so a default that moves or a key that appears fails here.
    expect(accepted(minimal())).to.deep.equal({
      hosts: [
        { alias: "a", destination: "root@10.0.0.1", port: 22, user: "root", auth: "key", fabricInterface: "eth1", stateDir: "/var/lib/narwhal-fleet", retainOnDestroy: false },
        { alias: "b", destination: "10.0.0.2", port: 22, user: "root", auth: "key", fabricInterface: "eth1", stateDir: "/var/lib/narwhal-fleet", retainOnDestroy: false },
      ],
      engines: [
        { id: "e0", host: "a", role: "prefill", pin: false, port: 8100, attestationPort: 8200, nixlPort: 5600, index: 0 },
        { id: "e1", host: "b", role: "decode", pin: false, port: 8101, attestationPort: 8201, nixlPort: 5601, index: 1 },
      ],
      model: { servedName: "qwen3-8b", checkpointDir: "/srv/models/qwen3-8b" },
      runtime: {
        kind: "native",
        vllmCommand: "vllm",
        dockerCommand: "docker",
        restartKvPeers: true,
        deadlinesS: { pull: 600, start: 300, stop: 60, inspect: 30, health: 15 },
      },
      launch: {
        transport: "tcp",
        dtype: "model",
        kvCacheDtype: "auto",
        blockSize: 128,
        enforceEager: true,
        maxModelLen: 16384,
        maxNumSeqs: 8,
        gpuMemoryUtilization: 0.9,
        prefixCaching: false,
        ucxTcpPortRange: "6300-6500",
        kvLeaseDurationS: 30,
      },
      slo: { ttftS: 10, tpotS: 0.125, firstTokenTimeoutS: 2.5, requestTimeoutS: 600, prefillTimeoutS: 120, healthTimeoutS: 5 },
      router: { bindAddress: "0.0.0.0", port: 8000, startTimeoutS: 120, narwhal: { version: "0.7.0", installTimeoutS: 600 } },
      observability: {
        enabled: true,
        prometheusPort: 9090,
        grafanaPort: 3000,
        freshnessPort: 9839,
        scrapeIntervalS: 5,
        runtime: "container",
        prometheusImage: "prom/prometheus:v3.9.1",
        grafanaImage: "grafana/grafana:12.3.1",
        prometheusCommand: "prometheus",
      },
      ssh: { allowFirstContact: true, maxSessionsPerHost: 4, connectTimeoutS: 10, commandTimeoutS: 120 },
      fabric: { promptTokens: 1024, handoffRate: 1, burst: 1, budgetS: 1, headroom: 1.25, iperfPort: 5201, durationS: 2, rdmaPort: 18515, rdmaMessageBytes: 65536, rdmaIterations: 5000 },
      profiling: {
        prefillLens: [256, 512, 1024, 2048, 4096, 8192, 16384],
        decodeInputLens: [512, 4096, 8192],
        decodeConcurrency: [1, 4, 16, 48],
        decodeTokens: 64,
        prefillRepeats: 3,
        decodeRepeats: 1,
        oneAtATime: false,
        fitAttempts: 3,
      },
      attestation: { startTimeoutS: 60 },
      preflight: { pairs: "mesh", repeats: 1, schedule: "concurrent", strict: false },
      calibration: { enabled: false, samplesPerGroup: 100, routerOverheadS: 0.05, maxFailuresPerGroup: 20 },
      trial: { points: [], requestTimeoutS: 120, drainTimeoutS: 120, minGoodFraction: 0.9, predictionBound: 0.5 },
      evidence: {},
      rollout: { allowRoleOutage: false },
    });
  });

  it("applies exactly the runbook's launch, SLO, fabric budget and profiling defaults", () => {
    const spec = accepted(minimal());
    expect(spec.launch).to.deep.equal(RUNBOOK_DEFAULTS.launch);
    expect(spec.slo).to.deep.equal(RUNBOOK_DEFAULTS.slo);
    const { iperfPort: _port, durationS: _duration, rdmaPort: _rdmaPort, rdmaMessageBytes: _bytes, rdmaIterations: _iterations, ...budget } = spec.fabric;
    expect(budget).to.deep.equal(RUNBOOK_DEFAULTS.fabric);
    // oneAtATime and fitAttempts are the program's, not the runbook's.
    const { oneAtATime: _one, fitAttempts: _tries, ...sweep } = spec.profiling;
    expect(sweep).to.deep.equal(RUNBOOK_DEFAULTS.profiling);
    expect(spec.calibration.samplesPerGroup).to.equal(RUNBOOK_DEFAULTS.calibration.samplesPerGroup);
  });

  it("keeps RUNBOOK_DEFAULTS read-only, and a parsed spec does not share its arrays", () => {
    expect(Object.isFrozen(RUNBOOK_DEFAULTS)).to.equal(true);
    expect(Object.isFrozen(RUNBOOK_DEFAULTS.launch)).to.equal(true);
    expect(Object.isFrozen(RUNBOOK_DEFAULTS.profiling.prefillLens)).to.equal(true);
    const spec = accepted(minimal());
    spec.profiling.prefillLens.push(32768); // a consumer editing its spec must not move the defaults
    expect(RUNBOOK_DEFAULTS.profiling.prefillLens).to.have.length(7);
  });

  it("gives the fourth engine on a host ports 8103/8203/5603, distinct from the first's", () => {
    const c = minimal();
    c.engines = [
      { id: "e0", host: "a", gpuIds: [0] },
      { id: "e1", host: "b" },
      { id: "e2", host: "b", gpuIds: [0] },
      { id: "e3", host: "a", gpuIds: [1] },
    ];
    c.engines[1].gpuIds = [1]; // e1 shares host b with e2, so it must list its GPUs too
    const e3 = accepted(c).engines[3];
    expect([e3.port, e3.attestationPort, e3.nixlPort, e3.role, e3.index]).to.deep.equal([8103, 8203, 5603, "decode", 3]);
  });
});
