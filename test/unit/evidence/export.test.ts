import { expect } from "chai";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { parseFleetConfig } from "../../../lib/config/parse";
import { SECRET_CONFIG_KEYS } from "../../../lib/config/secrets";
import { EvidenceStore } from "../../../lib/evidence/store";
import { exportAliases, splitStackConfig } from "../../../lib/evidence/export-aliases";
import { exportDeploymentRecord } from "../../../lib/evidence/export";
import type { ExportAliases } from "../../../lib/evidence/sanitise";
import { TRIAL_ARTIFACTS, TRIAL_POINTS, trialRecord } from "../../fixtures/report/trial";
import { filesUnder, rejectionOf, sampleRecord, tempDirs } from "./helpers";

const API_KEY = "nw-live-7f3a9c2e51b84d06a1e2";
const PASSWORD = "hunter2-on-sim2";
const GRAFANA = "grafana-admin-pw-51";
const PRIVATE_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU=\n-----END OPENSSH PRIVATE KEY-----\n";
const REV = "9b0cc90e0d1f2a3b4c5d6e7f8091a2b3c4d5e6f7";

const spec = () =>
  parseFleetConfig({
    hosts: [
      { alias: "sim1", destination: "ubuntu@10.77.0.11", fabricInterface: "fab0" },
      { alias: "sim2", destination: "ops@gpu-b.corp.example", port: 2222, fabricInterface: "fab0", auth: "password" },
    ],
    engines: [
      { id: "e0", host: "sim1" },
      { id: "e1", host: "sim2" },
    ],
    model: { servedName: "qwen3-8b", checkpointDir: "/srv/narwhal/models/qwen3-8b" },
  });

/** Every IPv4 literal other than the two that name no machine. */
const addressesIn = (text: string) => (text.match(/(?<![\w.])\d{1,3}(?:\.\d{1,3}){3}(?![\w]|\.\d)/g) ?? []).filter((a) => a !== "0.0.0.0" && a !== "127.0.0.1");

describe("evidence: deployment record export", () => {
  const dirs = tempDirs();
  let project: string;
  let aliases: ExportAliases;

  beforeEach(() => {
    project = path.join(dirs.tmp(), "project");
    aliases = exportAliases({
      spec: spec(),
      stack: "dev",
      discovered: { sim1: { hostname: "gpu-node-17", fabricAddress: "10.78.0.11" }, sim2: { hostname: "gpu-b", fabricAddress: "fd00:78::12" } },
      secrets: [API_KEY, PASSWORD, GRAFANA, PRIVATE_KEY],
      projectRoot: project,
      home: "/home/operator",
    });
    expectOwnStateDirAliases();
  });

  /** Each distinct stateDir gets its own run and state aliases, named after the first host that uses it. */
  function expectOwnStateDirAliases(): void {
    const own = parseFleetConfig({
      hosts: [
        { alias: "sim1", destination: "ubuntu@10.77.0.11", fabricInterface: "fab0" },
        { alias: "sim2", destination: "ops@10.77.0.12", fabricInterface: "fab0", stateDir: "/home/ops/.narwhal-fleet/" },
        { alias: "sim3", destination: "ops@10.77.0.13", fabricInterface: "fab0", stateDir: "/home/ops/.narwhal-fleet/" },
      ],
      engines: [
        { id: "e0", host: "sim1" },
        { id: "e1", host: "sim2" },
      ],
      model: { servedName: "qwen3-8b", checkpointDir: "/srv/narwhal/models/qwen3-8b" },
    });
    expect(exportAliases({ spec: own, stack: "dev", projectRoot: project }).paths).to.deep.equal({
      run: "/var/lib/narwhal-fleet/dev",
      state: "/var/lib/narwhal-fleet",
      "run-sim2": "/home/ops/.narwhal-fleet/dev",
      "state-sim2": "/home/ops/.narwhal-fleet/",
      model: "/srv/narwhal/models/qwen3-8b",
      project,
    });
  }

  /** A store as a real run leaves it: records and artifacts that name the private environment. */
  async function fill(store: EvidenceStore): Promise<void> {
    await store.write(sampleRecord());
    const log = await store.writeArtifact(
      "fabric-edge",
      "/var/lib/narwhal-fleet/dev/fabric/iperf3.log",
      `connected to 10.78.0.11 from [fd00:78::12] via 10.99.0.5\nAuthorization: Bearer ${API_KEY}\nsshpass -p ${PASSWORD}\nkey ${PRIVATE_KEY}saved in ${project}/runs/dev/x.json and /home/operator/.ssh/id_ed25519\n`,
    );
    const blob = await store.writeArtifact("fabric-edge", "capture.bin", Buffer.from([0, 1, 2, 3, 0xff]));
    await store.write(
      sampleRecord({
        kind: "fabric-edge",
        subject: { kind: "edge", alias: "sim1->sim2" },
        inputs: { route: "10.78.0.11 -> fd00:78::12", gateway: "10.99.0.5" },
        startingState: { engines: "idle", lock: "/var/lib/narwhal-fleet/dev/fabric.lock" },
        commands: [
          { argv: ["iperf3", "-c", "fd00:78::12", "-B", "10.78.0.11"], host: "sim1", exitStatus: 0, startedAt: "2025-01-31T12:01:00.000Z", endedAt: "2025-01-31T12:01:05.000Z" },
          { argv: ["curl", "-H", `Authorization: Bearer ${API_KEY}`, "http://gpu-b:8000/health"], host: "sim2", exitStatus: 7, startedAt: "2025-01-31T12:01:05.000Z", endedAt: "2025-01-31T12:01:06.000Z" },
        ],
        startedAt: "2025-01-31T12:01:00.000Z",
        endedAt: "2025-01-31T12:01:06.000Z",
        observations: { peer: "ops@gpu-b.corp.example", grafana: `http://admin:${GRAFANA}@10.99.0.5:3000/`, sshPassword: PASSWORD },
        artifacts: [log, blob],
      }),
    );
  }

  it("writes the per-gate record, every record and the text artifacts with no private address, path or secret", async () => {
    // The store registers no secrets here: the export has to catch what a store elsewhere let through.
    const store = new EvidenceStore(dirs.root());
    await fill(store);
    const out = path.join(dirs.tmp(), "export");
    const result = await exportDeploymentRecord({ store, stack: "dev", aliases, outDir: out, sourceRevision: REV });

    const files = filesUnder(out);
    const names = files.map((f) => path.relative(out, f.file)).sort();
    expect(names).to.have.length(5);
    expect(names.filter((n) => n.startsWith("records/"))).to.have.length(2);
    expect(names.filter((n) => n.startsWith("artifacts/fabric-edge/"))).to.have.length(1);
    expect(Object.keys(result.withheld)).to.have.length(1);

    for (const { file, bytes } of files) {
      const text = bytes.toString("utf8");
      expect(addressesIn(text), file).to.deep.equal([]);
      for (const v of ["fd00:78::12", "ubuntu@", "ops@", "gpu-node-17", "gpu-b", "corp.example", "/srv/narwhal", "/var/lib/narwhal-fleet", project, "/home/operator"]) {
        expect(text, `${file}: ${v}`).not.to.include(v);
      }
      for (const secret of [API_KEY, PASSWORD, GRAFANA, PRIVATE_KEY, "b3BlbnNzaC1rZXktdjEAAAAABG5vbmU="]) {
        for (const form of [secret, Buffer.from(secret).toString("base64")]) expect(text, file).not.to.include(form);
      }
    }

    const index = JSON.parse(fs.readFileSync(path.join(out, "deployment-record.json"), "utf8"));
    const gateD = index.gates.find((g: { gate: string }) => g.gate === "D");
    expect(gateD.status).to.equal("pass");
    expect(gateD.steps[0].hosts).to.deep.equal(["sim1", "sim2"]);
    expect(gateD.steps[0].startingState).to.deep.equal({ kind: "recorded", value: { engines: "idle", lock: "path:run/fabric.lock" } });
    expect(gateD.steps[0].commands).to.deep.equal([
      { host: "sim1", argv: ["iperf3", "-c", "host:sim2", "-B", "host:sim1"], exitStatus: 0 },
      { host: "sim2", argv: ["curl", "-H", "Authorization: Bearer secret:redacted", "http://host:sim2:8000/health"], exitStatus: 7 },
    ]);
    expect(gateD.steps[0].artifacts.map((a: { name: string }) => a.name)).to.deep.equal(["path:run/fabric/iperf3.log", "capture.bin"]);
    expect(index.gates.find((g: { gate: string }) => g.gate === "A").steps[0].sourceRevision).to.equal(REV);
    expect(index.index).to.deep.equal(result.index);

    // One alias per value across files: the unknown gateway is addr:1 in the record, the index and the artifact.
    const record = JSON.parse(files.find((f) => f.file.includes("records/fabric-edge/"))!.bytes.toString("utf8"));
    expect(record.inputs).to.deep.equal({ route: "host:sim1 -> host:sim2", gateway: "addr:1" });
    expect(record.observations).to.deep.equal({ peer: "host:sim2", grafana: "http://secret:redacted@addr:1:3000/", sshPassword: "secret:redacted" });
    const artifact = files.find((f) => f.file.includes("artifacts/fabric-edge/"))!.bytes.toString("utf8");
    expect(artifact.split("\n")[0]).to.equal("connected to host:sim1 from host:sim2 via addr:1");
    expect(artifact).to.include("path:project/runs/dev/x.json and path:home/.ssh/id_ed25519");

    const manifest = JSON.parse(fs.readFileSync(path.join(out, "manifest.json"), "utf8"));
    for (const [name, digest] of Object.entries(manifest.files)) {
      expect(`sha256:${createHash("sha256").update(fs.readFileSync(path.join(out, name))).digest("hex")}`, name).to.equal(digest);
    }
    expect(Object.values(manifest.withheld)).to.deep.equal(["binary content cannot be sanitised"]);
  });

  it("carries a capacity-trial point into Gate G with its trial verdict, its reasons and its six artifacts, sanitised", async () => {
    const store = new EvidenceStore(dirs.root());
    const point = TRIAL_POINTS[2];
    const artifacts = [];
    for (const name of TRIAL_ARTIFACTS) {
      const text = name === "tunnel.log" ? "ssh -N -L 127.0.0.1:41234:10.77.0.11:8080 ubuntu@10.77.0.11\nforward up\n" : `{"point":"${point.id}","file":"${name}"}\n`;
      artifacts.push(await store.writeArtifact("load-trial", name, text));
    }
    const written = await store.write(trialRecord("dev", point, artifacts));
    const out = path.join(dirs.tmp(), "export");
    const result = await exportDeploymentRecord({ store, stack: "dev", aliases, outDir: out, sourceRevision: REV });

    const index = JSON.parse(fs.readFileSync(path.join(out, "deployment-record.json"), "utf8"));
    const gateG = index.gates.find((g: { gate: string }) => g.gate === "G");
    expect(gateG.status).to.equal("fail");
    expect(gateG.steps).to.have.length(1);
    const step = gateG.steps[0];
    expect(step).to.deep.include({ kind: "load-trial", subject: "fleet p3", trial: { point: "p3", offeredRate: 5, verdict: "slo-miss" }, record: written });
    expect(step.verdict).to.deep.equal({ status: "fail", reasons: ["trial point p3: slo-miss", point.reasons![0], `slo-miss: ${point.reasons![0]}`] });
    expect(step.artifacts.map((a: { name: string }) => a.name)).to.deep.equal(TRIAL_ARTIFACTS);
    for (const a of artifacts) expect(result.files, a.name).to.have.property(path.posix.join("artifacts", a.relativePath.replace("/artifacts/", "/")));
    // The tunnel's log names the router's private address; the export names its host instead.
    const tunnel = fs.readFileSync(path.join(out, "artifacts", artifacts[5].relativePath.replace("/artifacts/", "/")), "utf8");
    expect(tunnel).to.equal("ssh -N -L 127.0.0.1:41234:host:sim1:8080 host:sim1\nforward up\n");
    expect(result.deployment.gates.find((g) => g.gate === "G")!.status).to.equal("fail");
  });

  it("keeps the private index in the store, the same one for the same evidence, and never mixes two exports in one folder", async () => {
    const store = new EvidenceStore(dirs.root());
    await fill(store);
    const first = await exportDeploymentRecord({ store, stack: "dev", aliases, outDir: path.join(dirs.tmp(), "one"), sourceRevision: REV });
    const again = await exportDeploymentRecord({ store, stack: "dev", aliases, outDir: path.join(dirs.tmp(), "two"), sourceRevision: REV });
    expect(again).to.deep.equal(first);
    const held = await store.read(first.index.relativePath, first.index.digest);
    expect(held.kind).to.equal("deployment-record");
    // The private index names the private environment; only the export is sanitised.
    expect(JSON.stringify(held.observations)).to.include("10.78.0.11");
    for (const name of Object.keys(first.files)) {
      expect(fs.readFileSync(path.join(dirs.tmp(), "two", name)).equals(fs.readFileSync(path.join(dirs.tmp(), "one", name))), name).to.equal(true);
    }
    const refused = await rejectionOf(exportDeploymentRecord({ store, stack: "dev", aliases, outDir: path.join(dirs.tmp(), "one"), sourceRevision: REV }));
    expect(refused.code).to.equal("NARWHAL_EVIDENCE_EXPORT");
    expect(refused.message).to.equal(`export folder ${path.join(dirs.tmp(), "one")} is not empty; name a new folder for each export`);
  });

  it("stops on evidence changed after it was written, naming the file", async () => {
    const store = new EvidenceStore(dirs.root());
    await fill(store);
    const [victim] = await store.list("discovery");
    fs.chmodSync(path.join(dirs.root(), victim.relativePath), 0o600);
    fs.appendFileSync(path.join(dirs.root(), victim.relativePath), " ");
    const error = await rejectionOf(exportDeploymentRecord({ store, stack: "dev", aliases, outDir: path.join(dirs.tmp(), "x"), sourceRevision: REV }));
    expect(error.code).to.equal("NARWHAL_EVIDENCE_INVALID");
    expect(error.message).to.include(victim.relativePath);
    expect(fs.existsSync(path.join(dirs.tmp(), "x"))).to.equal(false);
  });

  it("takes host aliases from the stack config and discovery, and fixed path aliases", () => {
    expect(aliases.hosts).to.deep.equal({
      sim1: ["ubuntu@10.77.0.11", "gpu-node-17", "10.78.0.11"],
      sim2: ["ops@gpu-b.corp.example", "gpu-b", "fd00:78::12"],
    });
    expect(aliases.paths).to.deep.equal({
      run: "/var/lib/narwhal-fleet/dev",
      state: "/var/lib/narwhal-fleet",
      model: "/srv/narwhal/models/qwen3-8b",
      project,
      home: "/home/operator",
    });
    expectOwnStateDirAliases();
  });

  it("splits stack config into the plain keys the schema reads and every secret value, nested ones too", () => {
    const { plain, secrets } = splitStackConfig("narwhal-fleet", {
      "narwhal-fleet:hosts": { value: '[{"alias":"sim1"}]' },
      "narwhal-fleet:model": { value: "plain text" },
      "narwhal-fleet:engineApiKey": { value: API_KEY, secret: true },
      "narwhal-fleet:sshPasswords": { value: JSON.stringify({ sim2: PASSWORD }), secret: true },
      "narwhal-fleet:sshPrivateKeyFile": { value: "keys/id_ed25519" },
      "narwhal-fleet:grafanaAdminPassword": { value: GRAFANA },
      "other:token": { value: "tok-9", secret: true },
      "other:plain": { value: "x" },
    });
    expect(plain).to.deep.equal({ hosts: [{ alias: "sim1" }], model: "plain text" });
    expect(secrets).to.have.members([API_KEY, JSON.stringify({ sim2: PASSWORD }), PASSWORD, GRAFANA, "tok-9"]);
  });

  it("redacts the value of every key the stack config reads as a secret, even when it is not marked secret", () => {
    for (const key of SECRET_CONFIG_KEYS) {
      const { plain, secrets } = splitStackConfig("narwhal-fleet", { [`narwhal-fleet:${key}`]: { value: "in-clear-text" } });
      expect(secrets, key).to.deep.equal(["in-clear-text"]);
      expect(plain, key).to.deep.equal({});
    }
  });
});
