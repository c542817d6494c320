import { expect } from "chai";
import { isIPv6 } from "node:net";
import { canonicalJson } from "../../../lib/digest";
import { exportSanitised, type ExportAliases } from "../../../lib/evidence/sanitise";
import { parseEvidenceRecord } from "../../../lib/evidence/record";
import { rejectionOf, sampleRecord } from "./helpers";

const API_KEY = "nw-live-7f3a9c2e51b84d06a1e2";
const GRAFANA = "grafana-admin-pw-51";

const ALIASES: ExportAliases = {
  hosts: {
    sim1: ["ubuntu@10.77.0.11", "fd00:77::11", "gpu-node-17"],
    sim2: ["ubuntu@10.77.0.12:2222", "[fd00:77::12]"],
    router: "ops@router.corp.example",
  },
  paths: { run: "/srv/narwhal/runs/dev", models: "/srv/narwhal/models" },
  secrets: [API_KEY, GRAFANA],
};

function fabricRecord() {
  return sampleRecord({
    kind: "fabric-edge",
    subject: { kind: "edge", alias: "sim1->sim2" },
    inputs: { route: "10.77.0.11 dev fab0 src 10.77.0.11 via 10.77.0.99", transport: "tcp" },
    commands: [
      {
        argv: ["iperf3", "-c", "10.77.0.12", "-B", "10.77.0.11", "--json"],
        host: "sim1",
        exitStatus: 0,
        startedAt: "2025-01-31T12:00:00.000Z",
        endedAt: "2025-01-31T12:00:01.250Z",
      },
    ],
    observations: {
      engineUrl: "http://10.77.0.12:8000/v1/models",
      peerUrl: "http://[fd00:77::11]:8000/metrics",
      sameHostOtherSpelling: "FD00:77:0:0::11",
      gateway: "10.77.0.99",
      v6Unknown: "fd00:99::1.",
      linkLocal: "fe80::1%fab0",
      jump: "root@10.9.9.9",
      router: "ops@router.corp.example:22",
      hostname: "GPU-NODE-17",
      listen: ["0.0.0.0:8000", "127.0.0.1:9090", "[::1]:8000", "[::]:8000"],
      mac: "52:54:00:12:34:56",
      busId: "0000:3b:00.0",
      time: "12:30:45.123",
      image: "vllm/vllm-openai@sha256:" + "1".repeat(64),
      npm: "@pulumi/command@1.2.1",
      capture: "/srv/narwhal/runs/dev/fabric/sim1-sim2.json",
      checkpoint: "file:///srv/narwhal/models/qwen3-8b/config.json",
      notUnderPrefix: "/srv/narwhal/models-old/x",
      auth: `Authorization: Bearer ${API_KEY}`,
      grafanaUrl: `http://admin:${GRAFANA}@10.77.0.12:3000/`,
      grafanaAdminPassword: "changeme",
      envFile: "GF_SECURITY_ADMIN_PASSWORD=changeme\nGF_SERVER_HTTP_PORT=3000",
      launch: ["vllm", "serve", "--api-key", "typed-by-hand"],
      script: "vllm serve --token=abc --max-num-batched-tokens 8192",
      reason: "Token budget exceeded on 10.77.0.12",
      byAddress: { "10.77.0.11": 31.2, "10.77.0.12": 30.8 },
      tokenizer: { eos_token: "</s>", hf_token: "hf_abcdef" },
    },
  });
}

/** Every IP literal in text, other than the four that name no machine. */
function privateAddresses(text: string): string[] {
  const v4 = (text.match(/(?<![\w.])\d{1,3}(?:\.\d{1,3}){3}(?![\w]|\.\d)/g) ?? []).filter((a) => a !== "0.0.0.0" && a !== "127.0.0.1");
  const v6 = (text.match(/[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*(?:%[\w.-]+)?/g) ?? [])
    .map((c) => c.replace(/[.:]+$/, ""))
    .filter((c) => isIPv6(c) && c !== "::" && c !== "::1");
  return [...v4, ...v6];
}

describe("evidence: sanitised export", () => {
  it("replaces addresses, destinations, paths and credentials with stable aliases", () => {
    const [, fabric] = exportSanitised([sampleRecord(), fabricRecord()], ALIASES);
    expect(fabric.inputs).to.deep.equal({ route: "host:sim1 dev fab0 src host:sim1 via addr:1", transport: "tcp" });
    expect(fabric.commands[0].argv).to.deep.equal(["iperf3", "-c", "host:sim2", "-B", "host:sim1", "--json"]);
    expect(fabric.observations).to.deep.equal({
      engineUrl: "http://host:sim2:8000/v1/models",
      peerUrl: "http://host:sim1:8000/metrics",
      sameHostOtherSpelling: "host:sim1",
      gateway: "addr:1",
      v6Unknown: "addr:2.",
      linkLocal: "addr:3",
      jump: "dest:1",
      router: "host:router:22",
      hostname: "host:sim1",
      listen: ["0.0.0.0:8000", "127.0.0.1:9090", "[::1]:8000", "[::]:8000"],
      mac: "52:54:00:12:34:56",
      busId: "0000:3b:00.0",
      time: "12:30:45.123",
      image: "vllm/vllm-openai@sha256:" + "1".repeat(64),
      npm: "@pulumi/command@1.2.1",
      capture: "path:run/fabric/sim1-sim2.json",
      checkpoint: "file://path:models/qwen3-8b/config.json",
      notUnderPrefix: "/srv/narwhal/models-old/x",
      auth: "Authorization: Bearer secret:redacted",
      grafanaUrl: "http://secret:redacted@host:sim2:3000/",
      grafanaAdminPassword: "secret:redacted",
      envFile: "GF_SECURITY_ADMIN_PASSWORD=secret:redacted\nGF_SERVER_HTTP_PORT=3000",
      launch: ["vllm", "serve", "--api-key", "secret:redacted"],
      script: "vllm serve --token=secret:redacted --max-num-batched-tokens 8192",
      reason: "Token budget exceeded on host:sim2",
      byAddress: { "host:sim1": 31.2, "host:sim2": 30.8 },
      tokenizer: { eos_token: "</s>", hf_token: "secret:redacted" },
    });
  });

  it("replaces the addresses RDMA GIDs carry, in sysfs's hex and perftest's decimal spelling", () => {
    const [r] = exportSanitised(
      [
        sampleRecord({
          observations: {
            gid: "0000:0000:0000:0000:0000:ffff:0a4d:000b",
            perftest: " GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:77:00:12",
            unknown: "00:00:00:00:00:00:00:00:00:00:255:255:10:99:00:01",
            v6: "253:00:00:119:00:00:00:00:00:00:00:00:00:00:00:17",
            notAGid: "00:00:00:00:00:00:00:00:00:00:255:255:10:77:00:999",
          },
        }),
      ],
      ALIASES,
    );
    expect(r.observations).to.deep.equal({ gid: "host:sim1", perftest: " GID: host:sim2", unknown: "addr:1", v6: "host:sim1", notAGid: "00:00:00:00:00:00:00:00:00:00:255:255:10:77:00:999" });
  });

  it("gives one value the same alias in every record of an export", () => {
    const first = sampleRecord({ observations: { seen: ["10.1.2.3", "fd00:1::9", "root@10.9.9.9"] } });
    const second = sampleRecord({ observations: { again: ["FD00:1:0::9", "root@10.9.9.9", "10.1.2.3", "10.1.2.4"] } });
    const [a, b] = exportSanitised([first, second], ALIASES);
    expect(a.observations).to.deep.equal({ seen: ["addr:1", "addr:2", "dest:1"] });
    expect(b.observations).to.deep.equal({ again: ["addr:2", "dest:1", "addr:1", "addr:3"] });
    expect(a.inputs).to.deep.equal({
      destination: "host:sim1",
      hostKey: sampleRecord().inputs.hostKey,
      fabricInterface: "fab0",
      modelDir: "path:models/qwen3-8b",
    });
  });

  it("exports no private address, destination, private path or secret, and leaves its input alone", () => {
    const records = [sampleRecord(), fabricRecord()];
    const before = canonicalJson(records);
    const exported = exportSanitised(records, ALIASES);
    expect(canonicalJson(records)).to.equal(before);
    const text = canonicalJson(exported);
    expect(privateAddresses(before)).to.have.length.greaterThan(10); // the check below can see them
    expect(privateAddresses(text)).to.deep.equal([]);
    for (const value of ["ubuntu@", "ops@", "root@", "gpu-node-17", "GPU-NODE-17", "router.corp.example", "/srv/narwhal/runs", "/srv/narwhal/models/"]) {
      expect(text, value).not.to.include(value);
    }
    for (const secret of [API_KEY, GRAFANA, "changeme", "typed-by-hand"]) {
      for (const form of [secret, Buffer.from(secret).toString("base64")]) expect(text).not.to.include(form);
    }
    for (const record of exported) expect(parseEvidenceRecord(record)).to.deep.equal(record);
  });

  it("rewrites only what was measured: a host name that is also a kind leaves kinds and times alone", () => {
    const record = sampleRecord({ kind: "router", subject: { kind: "host", alias: "rtr" }, observations: { upstream: "router:8000" } });
    const [exported] = exportSanitised([record], { hosts: { rtr: ["router", "10.0.0.9"] } });
    expect(exported).to.deep.equal({ ...record, inputs: { ...record.inputs, destination: "dest:1" }, observations: { upstream: "host:rtr:8000" } });
  });

  // Outside a git checkout the revision is `narwhal-fleet@<version>+tree:<hex>`: a version with a letter
  // (a pre-release, or `unknown` without a package.json) looked like user@host and became dest:N, which
  // the export's schema refuses as a revision.
  it("leaves this program's tree revision alone, whatever its version, and still rewrites a destination beside it", () => {
    for (const sourceRevision of ["narwhal-fleet@unknown+tree:e3b0c44298fc1c14", "narwhal-fleet@1.0.0-rc1+tree:e3b0c44298fc1c14"]) {
      const record = sampleRecord({ sourceRevision, observations: { ran: `${sourceRevision} as ops@gpu-b` } });
      const [exported] = exportSanitised([record], { hosts: { sim2: "ops@gpu-b" } });
      expect(exported.sourceRevision).to.equal(sourceRevision);
      expect(exported.observations).to.deep.equal({ ran: `${sourceRevision} as host:sim2` });
    }
  });

  it("refuses an alias map that gives one address to two hosts", () => {
    expect(() => exportSanitised([], { hosts: { sim1: "10.0.0.1", sim2: "ubuntu@10.0.0.1" } }))
      .to.throw("hosts sim1 and sim2 share an address or name in the export alias map; each value must name one host")
      .with.property("code", "NARWHAL_EVIDENCE_EXPORT");
  });

  it("refuses to merge two keys into one alias rather than drop a value", async () => {
    const record = sampleRecord({ observations: { bandwidth: { "10.77.0.11": 1, "gpu-node-17": 2 } } });
    const error = await rejectionOf(Promise.resolve().then(() => exportSanitised([record], ALIASES)));
    expect(error.code).to.equal("NARWHAL_EVIDENCE_EXPORT");
    expect(error.message).to.equal(
      'two keys of observations.bandwidth become "host:sim1" in the export; name each host by one address in the data, or export without that key',
    );
  });
});
