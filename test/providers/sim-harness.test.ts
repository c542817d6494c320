/**
 * The simulated fleet's hosts, checked over real SSH (ssh2, host key verified against the harness's
 * record). Needs root. Leaves the default fleet (sim1..sim3) up for the other provider tests.
 */
import { expect } from "chai";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import {
  readHostKeyPair,
  restartSshdWithHostKey,
  restartSshdWithNewHostKey,
  runInHost,
  simDown,
  simStatus,
  simUp,
  spawnInHost,
  sshExec,
  writeCheckpoint,
  writeHostCheckpoint,
} from "../../sim/hosts";
import type { SimFleet, SimHost } from "../../sim/hosts";
import { pciDevicesOf } from "../../sim/hosts/inventory";
import { SimConfigSchema } from "../../sim/engine/config";
import { buildTopology, HostSpec } from "../../sim/topology";

const DEFAULT_HOSTS = buildTopology({ hosts: 3 }).hosts;

/** Runs over SSH as root and fails the test on a non-zero exit. */
async function sh(host: SimHost, command: string): Promise<string> {
  const r = await sshExec(host, command);
  expect(r.code, `${host.alias}: ${command}\n${r.stderr}`).to.equal(0);
  return r.stdout;
}

const PCI_SCAN = 'for d in /sys/bus/pci/devices/*; do echo "${d##*/} $(cat "$d/class") $(cat "$d/vendor")"; done';

describe("sim topology", () => {
  it("defaults to two NVIDIA hosts and one AMD host, the later ones NVIDIA", () => {
    const t = buildTopology({ hosts: 5, topologyFile: null });
    expect(t.hosts.map((h) => [h.alias, h.address, h.layout.name, h.passwordAuth])).to.deep.equal([
      ["sim1", "198.18.0.11", "h100:2", false],
      ["sim2", "198.18.0.12", "h100:2", true],
      ["sim3", "198.18.0.13", "mi300x:2", false],
      ["sim4", "198.18.0.14", "h100:2", false],
      ["sim5", "198.18.0.15", "h100:2", false],
    ]);
  });

  it("reads an override file, and explicit options win over it", () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "topo-")), "topology.json");
    fs.writeFileSync(file, JSON.stringify({ hosts: 4, layouts: { sim4: "none" }, latency: { sim1: { decodeBase: 0.02 } } }));
    const t = buildTopology({ topologyFile: file, layouts: { sim2: "mi300x:4" } });
    expect(t.hosts.map((h) => h.layout.name)).to.deep.equal(["h100:2", "mi300x:4", "mi300x:2", "none"]);
    expect(t.hosts[0].latency.decodeBase).to.equal(0.02);
    expect(t.hosts[0].latency.prefillA).to.equal(2e-8);
  });

  it("names the allowed forms when a layout or override is wrong", () => {
    expect(() => buildTopology({ hosts: 4, layouts: { sim4: "h100" }, topologyFile: null })).to.throw(
      'invalid GPU layout "h100": use <model>:<count> with model one of h100, mi300x and count 1-8 (e.g. h100:2), or "none"',
    );
    expect(() => buildTopology({ hosts: 2, layouts: { sim3: "none" }, topologyFile: null })).to.throw(
      "layout given for sim3, but the fleet has hosts sim1..sim2; raise --hosts",
    );
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "topo-")), "topology.json");
    fs.writeFileSync(file, JSON.stringify({ hosts: 0, gpus: 2 }));
    expect(() => buildTopology({ topologyFile: file })).to.throw(/invalid topology override .*topology\.json/);
  });
});

describe("checkpoint writer", () => {
  it("writes well-formed safetensors shards and an index that maps every tensor", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ckpt-"));
    const files = writeCheckpoint(dir);
    expect(files.map((f) => f.path)).to.deep.equal([
      "README.md",
      "config.json",
      "generation_config.json",
      "model-00001-of-00002.safetensors",
      "model-00002-of-00002.safetensors",
      "model.safetensors.index.json",
      "tokenizer.json",
      "tokenizer_config.json",
    ]);
    const index = JSON.parse(fs.readFileSync(path.join(dir, "model.safetensors.index.json"), "utf8"));
    let total = 0;
    for (const shard of new Set(Object.values<string>(index.weight_map))) {
      const buf = fs.readFileSync(path.join(dir, shard));
      const headerLen = Number(buf.readBigUInt64LE(0));
      const header = JSON.parse(buf.subarray(8, 8 + headerLen).toString());
      const tensors = Object.entries(header).filter(([k]) => k !== "__metadata__") as Array<[string, { dtype: string; data_offsets: number[] }]>;
      for (const [name, t] of tensors) {
        expect(index.weight_map[name]).to.equal(shard);
        expect(t.dtype).to.equal("BF16");
      }
      const dataBytes = Math.max(...tensors.map(([, t]) => t.data_offsets[1]));
      expect(buf.length).to.equal(8 + headerLen + dataBytes);
      total += dataBytes;
    }
    expect(index.metadata.total_size).to.equal(total);
    expect(total).to.be.within(4 * 1024 * 1024, 16 * 1024 * 1024);
  });

  it("writes variants: config fields added or removed, extra files, another seed", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ckpt-"));
    const base = writeCheckpoint(fs.mkdtempSync(path.join(os.tmpdir(), "ckpt-")));
    const files = writeCheckpoint(dir, {
      config: { auto_map: { AutoModelForCausalLM: "modeling_tiny.TinyForCausalLM" }, torch_dtype: null },
      extraFiles: { "modeling_tiny.py": "class TinyForCausalLM: pass\n" },
      seed: "replica-b",
    });
    const config = JSON.parse(fs.readFileSync(path.join(dir, "config.json"), "utf8"));
    expect(config.auto_map).to.deep.equal({ AutoModelForCausalLM: "modeling_tiny.TinyForCausalLM" });
    expect(config).to.not.have.property("torch_dtype");
    expect(files.map((f) => f.path)).to.include("modeling_tiny.py");
    const shard = (list: typeof files) => list.find((f) => f.path === "model-00001-of-00002.safetensors")!;
    expect(shard(files).bytes).to.equal(shard(base).bytes);
    expect(shard(files).sha256).to.not.equal(shard(base).sha256);
  });
});

describe("sim host harness", function () {
  this.timeout(60_000);
  let fleet: SimFleet;
  const host = (alias: string) => fleet.hosts.find((h) => h.alias === alias)!;

  before(async () => {
    fleet = await simUp({ hosts: 3 });
  });

  it("brings up sim1..sim3 on 198.18.0.11-13 with two NVIDIA hosts and one AMD host", () => {
    expect(fleet.hosts.map((h) => [h.alias, h.address, h.layout, h.vendor])).to.deep.equal([
      ["sim1", "198.18.0.11", "h100:2", "nvidia"],
      ["sim2", "198.18.0.12", "h100:2", "nvidia"],
      ["sim3", "198.18.0.13", "mi300x:2", "amd"],
    ]);
    for (const h of fleet.hosts) {
      expect(h.fingerprint).to.match(/^SHA256:[A-Za-z0-9+/]{43}$/);
      expect(h.hostKey).to.match(/^ssh-ed25519 AAAA/);
    }
    expect(new Set(fleet.hosts.map((h) => h.fingerprint)).size).to.equal(3);
  });

  it("a second up keeps every running host and its sshd", async () => {
    const before = await simStatus();
    const again = await simUp({ hosts: 3 });
    expect(again.actions).to.deep.equal({ sim1: "kept", sim2: "kept", sim3: "kept" });
    const after = await simStatus();
    expect(after.hosts.map((h) => h.sshdPid)).to.deep.equal(before.hosts.map((h) => h.sshdPid));
  });

  for (const spec of DEFAULT_HOSTS) {
    describe(spec.alias, () => {
      it("has its own hostname", async () => {
        expect((await sh(host(spec.alias), "hostname")).trim()).to.equal(spec.alias);
      });

      it("shows its layout in /sys/bus/pci/devices, GPUs among devices a scan must filter", async () => {
        const lines = (await sh(host(spec.alias), PCI_SCAN)).trim().split("\n");
        const expected = pciDevicesOf(spec)
          .map((d) => `${d.address} ${d.pciClass} ${d.vendor}`)
          .sort();
        expect(lines).to.deep.equal(expected);
        const gpuLines = lines.filter((l) => / 0x03\d{4} 0x(10de|1002)$/.test(l));
        expect(gpuLines).to.have.length(2);
        expect(lines.length).to.be.greaterThan(gpuLines.length);
      });

      if (spec.layout.model?.vendor === "nvidia") {
        it("answers nvidia-smi --query-gpu and -L, and has no rocminfo", async () => {
          const h = host(spec.alias);
          const query = await sh(h, "nvidia-smi --query-gpu=index,name,pci.bus_id,uuid,memory.total --format=csv,noheader");
          expect(query).to.equal(h.gpus.map((g) => `${g.index}, NVIDIA H100 80GB HBM3, ${g.nvidiaBusId}, ${g.uuid}, 81559 MiB\n`).join(""));
          const list = await sh(h, "nvidia-smi -L");
          expect(list).to.equal(h.gpus.map((g) => `GPU ${g.index}: NVIDIA H100 80GB HBM3 (UUID: ${g.uuid})\n`).join(""));
          expect(await sh(h, "nvidia-smi")).to.contain("| NVIDIA-SMI 570.133.20");
          expect((await sshExec(h, "command -v rocminfo")).code).to.not.equal(0);
        });
      } else {
        it("answers rocminfo with one gfx942 agent per GPU, and has no nvidia-smi", async () => {
          const h = host(spec.alias);
          const out = await sh(h, "rocminfo");
          expect(out.match(/^\s*Marketing Name:\s+AMD Instinct MI300X$/gm)).to.have.length(2);
          expect(out.match(/^\s*Name:\s+gfx942$/gm)).to.have.length(2);
          for (const g of h.gpus) expect(out).to.match(new RegExp(`^\\s*Uuid:\\s+${g.uuid}$`, "m"));
          expect((await sshExec(h, "command -v nvidia-smi")).code).to.not.equal(0);
          expect(await sh(h, "ls /dev/kfd /dev/dri")).to.contain("renderD128");
          // /sys/class/drm as amdgpu leaves it: each render node's device is its GPU's PCI function.
          for (const g of h.gpus) expect(await sh(h, `readlink -f /sys/class/drm/renderD${g.renderMinor}/device`)).to.equal(`/sys/bus/pci/devices/${g.pciAddress}\n`);
          expect(await sh(h, "ls /sys/class")).to.contain("net");
        });
      }

      it("has one global address, on fab0, and routes to its peers through fab0", async () => {
        const h = host(spec.alias);
        const addr = await sh(h, "ip -o -4 addr show dev fab0 scope global");
        expect(addr.trim().split("\n")).to.have.length(1);
        expect(addr).to.contain(` inet ${spec.address}/24 `);
        // Nothing but loopback and the fabric address, IPv6 link-local included.
        const all = (await sh(h, "ip -o addr show")).trim().split("\n");
        const addresses = all.map((l) => l.split(/\s+/).slice(1, 4).join(" ")).sort();
        expect(addresses).to.deep.equal([`fab0 inet ${spec.address}/24`, "lo inet 127.0.0.1/8", "lo inet6 ::1/128"]);
        for (const peer of DEFAULT_HOSTS.filter((p) => p.alias !== spec.alias)) {
          expect(await sh(h, `ip route get ${peer.address}`)).to.match(new RegExp(`^${peer.address.replace(/\./g, "\\.")} dev fab0 src ${spec.address.replace(/\./g, "\\.")} `));
        }
      });

      it("holds the standard checkpoint at /models/tiny-llama, byte for byte", async () => {
        const h = host(spec.alias);
        const expected = writeCheckpoint(fs.mkdtempSync(path.join(os.tmpdir(), "ckpt-")));
        const sums = await sh(h, `cd ${h.modelDir} && find . -type f -exec sha256sum {} +`);
        const got = sums
          .trim()
          .split("\n")
          .map((l) => l.split(/\s+/))
          .map(([sum, file]) => ({ path: file.replace(/^\.\//, ""), sha256: sum }))
          .sort((a, b) => (a.path < b.path ? -1 : 1));
        expect(got).to.deep.equal(expected.map(({ path: p, sha256 }) => ({ path: p, sha256 })));
        const config = JSON.parse(await sh(h, `cat ${h.modelDir}/config.json`));
        expect(config).to.include({ model_type: "llama", hidden_size: 2048, num_key_value_heads: 8, head_dim: 64, torch_dtype: "bfloat16" });
      });

      it("has a vllm shim (0.29.0) and an engine sim config the simulator accepts", async () => {
        const h = host(spec.alias);
        expect((await sh(h, "vllm --version")).trim()).to.equal("0.29.0");
        const parsed = SimConfigSchema.parse(JSON.parse(fs.readFileSync(h.simConfigPath, "utf8")));
        expect(parsed.gpu).to.deep.equal({ ...gpuOf(spec), count: 2 });
        expect(parsed.latency.default).to.deep.equal(spec.latency);
        expect(parsed.timeScale).to.be.greaterThan(0);
      });
    });
  }

  it("gives each host its own /tmp, /opt, /srv, /root and /dev/shm", async () => {
    const token = `private-${process.pid}`;
    const dirs = ["/tmp", "/opt", "/srv", "/root", "/dev/shm"];
    await sh(host("sim1"), dirs.map((d) => `echo x > ${d}/${token}`).join(" && "));
    try {
      const seen = await sh(host("sim2"), `for d in ${dirs.join(" ")}; do [ -e "$d/${token}" ] && echo "$d"; done; true`);
      expect(seen).to.equal("");
      for (const d of dirs) expect(fs.existsSync(path.join(d, token)), `machine ${d}`).to.equal(false);
    } finally {
      await sh(host("sim1"), `rm -f ${dirs.map((d) => `${d}/${token}`).join(" ")}`);
    }
  });

  it("gives each host different latency coefficients", () => {
    const decodeBase = DEFAULT_HOSTS.map((h) => h.latency.decodeBase);
    expect(new Set(decodeBase).size).to.equal(DEFAULT_HOSTS.length);
  });

  it("carries iperf3 traffic between two hosts over the bridge", async () => {
    const [a, b] = [host("sim1"), host("sim2")];
    await sh(b, `iperf3 -s -B ${b.address} -p 5201 -1 -D`);
    let result = "";
    for (let attempt = 0; attempt < 20 && !result; attempt++) {
      const r = await sshExec(a, `iperf3 -c ${b.address} -B ${a.address} -p 5201 -t 1 -J`);
      if (r.code === 0) result = r.stdout;
      else await new Promise((res) => setTimeout(res, 100)); // the daemon may not be listening yet
    }
    const gbps = JSON.parse(result).end.sum_received.bits_per_second / 1e9;
    expect(gbps).to.be.greaterThan(0.1);
  });

  it("runInHost reaches the host's network namespace (tc throttle on fab0)", async () => {
    const out = await runInHost("sim1", ["ip", "-o", "link", "show", "dev", "fab0"]);
    expect(out.stdout).to.contain("fab0");
    expect((await runInHost("sim1", "hostname")).stdout.trim()).to.equal("sim1");
    await runInHost("sim1", ["tc", "qdisc", "replace", "dev", "fab0", "root", "tbf", "rate", "200mbit", "burst", "64kb", "latency", "50ms"]);
    try {
      // A server that outlives a failed try (no `-1`): on a loaded machine a try can connect before the
      // server listens, or end without a result (iperf3 then prints `end: {}` or an `error`), and is retried.
      const server = spawnInHost("sim2", ["iperf3", "-s", "-B", "198.18.0.12", "-p", "5202"]);
      let gbps = 0;
      let lastTry = "";
      try {
        for (let attempt = 0; attempt < 20 && !gbps; attempt++) {
          const r = await runInHost("sim1", ["iperf3", "-c", "198.18.0.12", "-p", "5202", "-t", "1", "-J"], { allowFail: true });
          const report = parseIperfReport(r.stdout);
          gbps = (report?.end?.sum_received?.bits_per_second ?? 0) / 1e9;
          lastTry = `exit ${r.code}: ${report?.error || r.stderr.trim() || "no result"}`;
          if (!gbps) await new Promise((res) => setTimeout(res, 250));
        }
      } finally {
        server.kill();
      }
      expect(gbps, `iperf3 through the throttle gave no result after 20 tries; last ${lastTry}`).to.be.greaterThan(0);
      expect(gbps).to.be.within(0.01, 0.3);
    } finally {
      await runInHost("sim1", ["tc", "qdisc", "del", "dev", "fab0", "root"]);
    }
  });

  it("accepts the narwhal password on the passwordAuth host only", async () => {
    const password = fs.readFileSync(host("sim2").passwordFile, "utf8").trim();
    expect(host("sim2").passwordAuth).to.equal(true);
    const r = await sshExec(host("sim2"), "id -un; hostname", { user: "narwhal", password });
    expect(r.stdout).to.equal("narwhal\nsim2\n");
    expect(host("sim1").passwordAuth).to.equal(false);
    let refused: Error | undefined;
    await sshExec(host("sim1"), "true", { user: "narwhal", password }).catch((e: Error) => (refused = e));
    expect(refused?.message).to.match(/authentication methods failed/);
  });

  it("lets a test change one replica's checkpoint and put it back", async () => {
    const h = host("sim2");
    const shard = path.join(h.modelDirOnMachine, "model-00002-of-00002.safetensors");
    fs.appendFileSync(shard, "x");
    const sum = async (alias: string) => (await sh(host(alias), `sha256sum ${h.modelDir}/model-00002-of-00002.safetensors`)).split(" ")[0];
    expect(await sum("sim2")).to.not.equal(await sum("sim1"));
    writeHostCheckpoint("sim2");
    expect(await sum("sim2")).to.equal(await sum("sim1"));
  });

  it("restarts sshd with a new host key: the old key is refused, the new one accepted", async () => {
    const saved = readHostKeyPair("sim3");
    const old = host("sim3");
    try {
      const renewed = await restartSshdWithNewHostKey("sim3");
      expect(renewed.fingerprint).to.not.equal(old.fingerprint);
      let refused: Error | undefined;
      await sshExec(old, "true").catch((e: Error) => (refused = e));
      expect(refused, "login pinned to the old key must fail").to.not.equal(undefined);
      expect((await sh(renewed, "hostname")).trim()).to.equal("sim3");
    } finally {
      const restored = await restartSshdWithHostKey("sim3", saved);
      expect(restored.fingerprint).to.equal(old.fingerprint);
    }
  });

  describe("a host with no GPU (layout none)", () => {
    let bare: SimHost;
    before(async () => {
      const four = await simUp({ hosts: 4, layouts: { sim4: "none" } });
      expect(four.actions).to.include({ sim1: "kept", sim2: "kept", sim3: "kept" });
      bare = four.hosts[3];
    });
    after(async () => {
      await simDown({ aliases: ["sim4"] });
    });

    it("shows no GPU device and no vendor tool", async () => {
      expect(bare).to.include({ alias: "sim4", address: "198.18.0.14", layout: "none", vendor: null });
      const lines = (await sh(bare, PCI_SCAN)).trim().split("\n");
      expect(lines.filter((l) => / 0x03\d{4} /.test(l))).to.deep.equal([]);
      expect(lines).to.have.length(3);
      expect((await sshExec(bare, "command -v nvidia-smi || command -v rocminfo")).code).to.not.equal(0);
      expect((await sh(bare, "hostname")).trim()).to.equal("sim4");
    });

    it("reaches the other hosts", async () => {
      expect(await sh(bare, "ip route get 198.18.0.11")).to.contain("dev fab0 src 198.18.0.14");
    });
  });

  it("reports every host up in status, with its fingerprint", async () => {
    const status = await simStatus();
    expect(status.bridge).to.deep.equal({ name: "nwbr0", exists: true, forwardRule: true });
    const rows = status.hosts.filter((h) => h.alias !== "sim4").map((h) => [h.alias, h.up, h.fingerprint]);
    expect(rows).to.deep.equal(fleet.hosts.map((h) => [h.alias, true, h.fingerprint]));
    expect(status.strayNetns).to.deep.equal([]);
  });
});

function gpuOf(spec: HostSpec) {
  const m = spec.layout.model!;
  return { product: m.product, memoryGiB: m.memoryGiB, vendor: m.vendor };
}

/** iperf3's `-J` report, or undefined when a try printed none (or half of one). */
function parseIperfReport(stdout: string): { error?: string; end?: { sum_received?: { bits_per_second?: number } } } | undefined {
  try {
    return JSON.parse(stdout);
  } catch {
    return undefined;
  }
}
