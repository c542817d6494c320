import { expect } from "chai";
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { modelRequirements } from "../../../lib/discovery/model";
import {
  blockingProblems,
  DEFAULT_MAX_FILE_BYTES,
  HostFacts,
  parseProbe,
  probeCommand,
  ProbeOptions,
} from "../../../lib/discovery/probe";
import { PROBE_SCRIPT, splitSections } from "../../../lib/discovery/probe-script";
import { TINY_LLAMA_CONFIG, writeCheckpoint } from "../../../sim/hosts";
import { IMAGE_ID, IMPORTED_INSPECT, PIP_LIST, VLLM_INSPECT, DIGEST } from "./fixtures/runtime";

const sha = (b: string | Buffer) => createHash("sha256").update(b).digest("hex");
const json = (v: unknown) => `${JSON.stringify(v, null, 2)}\n`;

/**
 * Recorded over SSH from simulated host sim2 with `probeCommand(SIM2)`: another test's engine (node)
 * held 8302 and 5702, and python3 http.server listened on 198.18.0.12:8100 and on *:5601.
 */
const SIM2_OUTPUT = fs.readFileSync(path.join(__dirname, "fixtures", "sim2-probe.txt"), "utf8");
const SIM2: ProbeOptions = {
  alias: "sim2",
  fabricInterface: "fab0",
  modelDir: "/models/tiny-llama",
  devicePaths: ["/dev/nvidia0", "/dev/nvidia1", "/dev/nvidiactl", "/dev/infiniband/uverbs0"],
  runtime: { kind: "native" },
  probeContainerName: "narwhal-probe-0123456789ab",
};

/** Replaces the body of one section of a probe output (or removes it, header included, with null). */
function withSection(output: string, name: string, body: string | null): string {
  const re = new RegExp(`\\n@@${name}\\n[\\s\\S]*?(?=\\n@@)`);
  expect(re.test(output), `section ${name} in the fixture`).to.equal(true);
  return output.replace(re, body === null ? "" : `\n@@${name}\n${body}`);
}

describe("discovery: the whole probe", () => {
  describe("probeCommand", () => {
    it("puts every value on one command line through shq, the script on stdin", () => {
      const cmd = probeCommand({
        alias: "h",
        fabricInterface: "fab0",
        modelDir: `/srv/models/it's a "model"`,
        devicePaths: ["/dev/kfd", "/dev/dri/renderD128"],
        runtime: { kind: "docker", image: `vllm/vllm-openai@${DIGEST}` },
        probeContainerName: "narwhal-probe-test",
      });
      expect(cmd.command).to.equal(
        `sh -s -- 'fab0' '/srv/models/it'\\''s a "model"' '${DEFAULT_MAX_FILE_BYTES}' 'docker' 'vllm/vllm-openai@${DIGEST}' 'docker' 'narwhal-probe-test' '/dev/kfd' '/dev/dri/renderD128'`,
      );
      expect(cmd.stdin).to.equal(PROBE_SCRIPT);
      expect(cmd.timeoutS).to.be.greaterThan(420);
    });

    it("keeps $1 the fabric interface and defaults the rest", () => {
      expect(probeCommand({ alias: "h", fabricInterface: "fab0", probeContainerName: "p" }).command).to.equal(
        `sh -s -- 'fab0' '' '${DEFAULT_MAX_FILE_BYTES}' 'none' '' 'docker' 'p'`,
      );
      expect(probeCommand({ alias: "h", fabricInterface: "fab0", runtime: { kind: "native" } }).command).to.match(/ 'native' 'vllm' 'docker' 'narwhal-probe-[0-9a-f]{12}'$/);
    });

    const refused: Array<[string, Partial<ProbeOptions>, string]> = [
      ["a relative device path", { devicePaths: ["dev/kfd"] }, 'device path "dev/kfd" is not absolute'],
      ["a device path with a newline", { devicePaths: ["/dev/a\nb"] }, "contains a tab or newline"],
      ["an image that looks like an option", { runtime: { kind: "docker", image: "--privileged" } }, 'runtime reference "--privileged" starts with "-"'],
      ["an empty vllm command", { runtime: { kind: "native", vllmCommand: "" } }, "runtime native needs a vllm command"],
      ["a bad container name", { probeContainerName: "a b" }, 'container name "a b" is not a valid docker name'],
    ];
    for (const [name, extra, message] of refused) {
      it(`refuses ${name}`, () => {
        expect(() => probeCommand({ alias: "sim9", fabricInterface: "fab0", ...extra })).to.throw("host sim9: cannot build the discovery probe: ");
        expect(() => probeCommand({ alias: "sim9", fabricInterface: "fab0", ...extra })).to.throw(message);
      });
    }
  });

  describe("parseProbe on sim2's recorded output", () => {
    const facts = parseProbe(SIM2_OUTPUT, {
      ...SIM2,
      plannedPorts: [
        { engineId: "e2", kind: "engine", port: 8100 },
        { engineId: "e2", kind: "attestation", port: 8302 },
        { engineId: "e2", kind: "nixl", port: 5601 },
        { engineId: "e2", kind: "transfer", range: [5700, 5799] },
        { engineId: "e3", kind: "engine", port: 8103 },
      ],
    });

    it("has no section errors", () => expect(facts.errors).to.deep.equal([]));

    it("reads hostname, GPUs and the fabric address", () => {
      expect(facts.hostname).to.equal("sim2");
      expect(facts.accelerators.vendor).to.equal("nvidia");
      expect(facts.accelerators.product).to.equal("NVIDIA H100 80GB HBM3");
      expect(facts.accelerators.gpus).to.have.length(2);
      expect(facts.fabric).to.deep.equal({ interface: "fab0", addresses: ["198.18.0.12"], address: "198.18.0.12" });
    });

    it("reads the checkpoint: the same requirements as the files the harness wrote, hashed exactly", () => {
      const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "narwhal-ckpt-"));
      try {
        writeCheckpoint(scratch, { shardBytes: 4096 });
        const config = fs.readFileSync(path.join(scratch, "config.json"));
        const tokenizer = fs.readFileSync(path.join(scratch, "tokenizer_config.json"));
        expect(facts.model!.requirements).to.deep.equal(modelRequirements(config, tokenizer));
        expect(facts.model!.requirements.configSha256).to.equal(sha(config));
        expect(facts.model!.tokenizerConfigSha256).to.equal(sha(tokenizer));
      } finally {
        fs.rmSync(scratch, { recursive: true, force: true });
      }
      expect(facts.model!.requirements).to.include({ architecture: "LlamaForCausalLM", dtype: "bfloat16", maxPositionEmbeddings: 32768, trustRemoteCode: false, ssmConvStateLayoutDS: false });
      expect(facts.model!.requirements.tokenizer).to.deep.equal({
        tokenizerClass: "LlamaTokenizerFast",
        modelMaxLength: 32768,
        bosToken: "<s>",
        eosToken: "</s>",
        chatTemplate: true,
      });
      expect(facts.model!.generationConfig).to.include({ bos_token_id: 1, eos_token_id: 2, max_length: 32768 });
      expect(facts.model!.chatTemplateFiles).to.deep.equal([]);
    });

    it("reads the listeners and the planned ports they block", () => {
      expect(facts.listeners).to.deep.equal([
        { address: "198.18.0.12", port: 8302, owners: [{ name: "node", pid: 18056 }] },
        { address: "198.18.0.12", port: 5702, owners: [{ name: "node", pid: 18056 }] },
        { address: "198.18.0.12", port: 8100, owners: [{ name: "python3", pid: 19314 }] },
        { address: "198.18.0.12", port: 22, owners: [{ name: "sshd", pid: 18989 }] },
        { address: "*", port: 5601, owners: [{ name: "python3", pid: 19313 }] },
      ]);
      expect(facts.portConflicts.map((c) => c.message)).to.deep.equal([
        "engine e2: planned engine HTTP port 8100 on host sim2 is already in use by python3 (pid 19314); stop it or choose another port",
        "engine e2: planned attestation port 8302 on host sim2 is already in use by node (pid 18056); stop it or choose another port",
        "engine e2: planned NIXL side-channel port 5601 on host sim2 is already in use by python3 (pid 19313); stop it or choose another port",
        "engine e2: planned transfer port range 5700-5799 on host sim2 includes port 5702, already in use by node (pid 18056); stop it or choose another range",
      ]);
    });

    it("reads the declared devices in the runbook's words", () => {
      expect(facts.devices!.missing).to.deep.equal(["/dev/infiniband/uverbs0"]);
      expect(facts.devices!.paths[0]).to.deep.equal({ path: "/dev/nvidia0", present: true, mode: "666", owner: "root", group: "root", type: "character special file" });
      expect(facts.devices!.message).to.equal("Restore the declared device exposure before launch. Missing on host sim2: /dev/infiniband/uverbs0.");
    });

    it("reads the native runtime: the shim's version, packages unknown because it is a shell script", () => {
      expect(facts.runtime).to.deep.equal({
        kind: "native",
        command: "vllm",
        path: "/usr/local/sbin/vllm",
        scriptKind: "shell",
        interpreter: null,
        vllmVersion: "0.29.0",
        packages: null,
        packageCount: null,
        packagesSource: null,
        packagesUnknownReason: "/usr/local/sbin/vllm is a shell script, not a Python console script, so its environment's packages cannot be read",
      });
    });

    it("lists what blocks launch", () => {
      expect(blockingProblems(facts)).to.deep.equal([facts.devices!.message, ...facts.portConflicts.map((c) => c.message)]);
    });

    it("works for the existing provider's shorter call (only $1), skipping what it did not ask for", () => {
      const f = parseProbe(SIM2_OUTPUT, { alias: "sim2", fabricInterface: "fab0" });
      expect(f).to.include({ model: null, devices: null, runtime: null });
      expect(f.errors).to.deep.equal([]);
      expect(f.portConflicts).to.deep.equal([]);
    });
  });

  describe("parseProbe on an MI300X host: render nodes read from /sys/class/drm, /dev/kfd and each of them checked", () => {
    const PCI = "0000:00:00.0 0x060000 0x8086\n0000:10:00.0 0x038000 0x1002\n0000:11:00.0 0x038000 0x1002\n";
    const agent = (n: number, bdfid: number) => `*******\nAgent ${n}\n*******\n  Name:                    gfx942\n  Uuid:                    GPU-000000000000000${n}\n  Marketing Name:          AMD Instinct MI300X\n  BDFID:                   ${bdfid}\n`;
    const ROCM = `ROCk module is loaded\n${agent(2, 0x1000)}${agent(3, 0x1100)}`;
    const DRM = "renderD128\t/sys/bus/pci/devices/0000:11:00.0\nrenderD129\t/sys/bus/pci/devices/0000:10:00.0\n";
    const node = (path: string) => `present\t${path}\t666\troot\troot\tcharacter special file\n`;
    /** sim2's recording with an AMD host's sections, and the GPU device nodes the probe found (`missing` ones absent). */
    function amdOutput(drm: string, missing: string[] = []): string {
      const gpuDevices = ["/dev/kfd", "/dev/dri/renderD128", "/dev/dri/renderD129"].map((p) => (missing.includes(p) ? `missing\t${p}\n` : node(p))).join("");
      const out = withSection(withSection(withSection(SIM2_OUTPUT, "pci", PCI), "nvidia", ""), "rocm", ROCM);
      return out.replace("\n@@end", `\n@@drm\n${drm}\n@@gpu_devices\n${gpuDevices}\n@@end`);
    }
    const opts: ProbeOptions = { alias: "sim3", fabricInterface: "fab0" };

    it("gives each GPU the render node of its PCI function and checks /dev/kfd and those nodes", () => {
      const f = parseProbe(amdOutput(DRM), opts);
      expect(f.errors).to.deep.equal([]);
      expect(f.accelerators.gpus.map((g) => [g.index, g.renderNode])).to.deep.equal([
        [0, "/dev/dri/renderD129"],
        [1, "/dev/dri/renderD128"],
      ]);
      expect(f.devices!.paths.map((p) => [p.path, p.present])).to.deep.equal([
        ["/dev/kfd", true],
        ["/dev/dri/renderD129", true],
        ["/dev/dri/renderD128", true],
      ]);
      expect(blockingProblems(f)).to.deep.equal([]);
    });

    it("refuses a missing /dev/kfd or render node before launch, naming the host and the device", () => {
      const f = parseProbe(amdOutput(DRM, ["/dev/kfd", "/dev/dri/renderD128"]), opts);
      expect(f.devices!.missing).to.deep.equal(["/dev/kfd", "/dev/dri/renderD128"]);
      expect(blockingProblems(f)).to.deep.equal(["Restore the declared device exposure before launch. Missing on host sim3: /dev/kfd, /dev/dri/renderD128."]);
      // Beside declared transfer devices, one check names them all.
      const declared = parseProbe(amdOutput(DRM, ["/dev/kfd"]), { ...opts, devicePaths: SIM2.devicePaths });
      expect(declared.devices!.message).to.equal("Restore the declared device exposure before launch. Missing on host sim3: /dev/infiniband/uverbs0, /dev/kfd.");
    });

    it("refuses a GPU sysfs shows no render node for, naming the host and the GPU", () => {
      const f = parseProbe(amdOutput("renderD128\t/sys/bus/pci/devices/0000:11:00.0\n"), opts);
      expect(f.accelerators.gpus.map((g) => g.renderNode)).to.deep.equal([undefined, "/dev/dri/renderD128"]);
      expect(blockingProblems(f)).to.deep.equal([
        "host sim3, probe section drm: AMD GPU 0 (rocminfo BDFID 4096, PCI 10:00.0) has no render node: no /sys/class/drm/renderD* links to that PCI function; is the amdgpu driver bound to it? Restore the declared device exposure before launch.",
      ]);
    });
  });

  describe("section errors, named by host and section", () => {
    const table: Array<[string, (o: string) => string, Partial<ProbeOptions>, Array<[string, string | RegExp]>, (f: HostFacts) => void]> = [
      [
        "output cut short",
        (o) => o.slice(0, o.indexOf("\n@@runtime_version_rc")),
        {},
        [
          ["end", "host sim2, probe section end: the probe output stopped early (no @@end marker); the login or the script was cut short — run discovery again"],
          ["runtime_version", "host sim2, probe section runtime_version: /usr/local/sbin/vllm --version printed no exit code (its output was cut short): no error output"],
        ],
        (f) => expect(f.runtime!.kind).to.equal("native"),
      ],
      [
        "a fabric interface that does not exist",
        (o) => withSection(o, "fabric", 'Device "fab9" does not exist.\n'),
        { fabricInterface: "fab9" },
        [["fabric", 'host sim2, probe section fabric: fabric interface fab9 does not exist on this host; check hosts[].fabricInterface (ip: Device "fab9" does not exist.)']],
        (f) => expect(f.fabric.address).to.equal(null),
      ],
      [
        "an interface with two global addresses",
        (o) => withSection(o, "fabric", "3: fab0    inet 198.18.0.12/24 scope global fab0\n3: fab0    inet 198.18.1.12/24 scope global fab0\n"),
        {},
        [["fabric", "host sim2, probe section fabric: fabric interface fab0 has several global addresses (198.18.0.12, 198.18.1.12); choose one with hosts[].fabricAddress"]],
        () => undefined,
      ],
      [
        "a checkpoint directory that does not exist",
        (o) => withSection(withSection(withSection(withSection(o, "model", "dir missing\n"), "model_config", null), "model_tokenizer_config", null), "model_generation_config", null),
        { modelDir: "/models/nope" },
        [["model", "host sim2, probe section model: checkpoint directory /models/nope does not exist; stage the checkpoint there (model.checkpointDir) before discovery"]],
        (f) => expect(f.model).to.equal(null),
      ],
      [
        "config.json missing",
        (o) => withSection(o, "model_config", "missing\n"),
        {},
        [["model_config", "host sim2, probe section model_config: /models/tiny-llama/config.json is missing; stage the checkpoint there (model.checkpointDir) before discovery"]],
        (f) => expect(f.model).to.equal(null),
      ],
      [
        "config.json not JSON",
        (o) => withSection(o, "model_config", `file 9 ${sha("not json\n")}\n${Buffer.from("not json\n").toString("base64")}\n`),
        {},
        [["model_config", /^host sim2, probe section model_config: \/models\/tiny-llama\/config.json is not valid JSON \(.+\); restage the checkpoint$/]],
        (f) => expect(f.model).to.equal(null),
      ],
      [
        "config.json over the bound",
        (o) => withSection(o, "model_config", "toolarge 5000000\n"),
        {},
        [["model_config", "host sim2, probe section model_config: /models/tiny-llama/config.json has 5000000 bytes, over the probe's bound; raise maxFileBytes if it is genuine"]],
        (f) => expect(f.model).to.equal(null),
      ],
      [
        "ss missing",
        (o) => withSection(withSection(withSection(o, "listeners", ""), "listeners_err", "ss: command not found (install iproute2)\n"), "listeners_rc", "127\n"),
        {},
        [["listeners", "host sim2, probe section listeners: ss -ltnp exited 127: ss: command not found (install iproute2)"]],
        (f) => expect(f.listeners).to.equal(null),
      ],
      [
        "vllm not installed",
        (o) =>
          withSection(
            withSection(withSection(withSection(o, "runtime", "kind native\ncommand /opt/venv/bin/vllm\nscript missing\n"), "runtime_version", null), "runtime_version_err", null),
            "runtime_version_rc",
            null,
          ),
        { runtime: { kind: "native", vllmCommand: "/opt/venv/bin/vllm" } },
        [["runtime", 'host sim2, probe section runtime: runtime.vllmCommand "/opt/venv/bin/vllm" is not an executable on this login\'s PATH; install vLLM or set runtime.vllmCommand to its path']],
        (f) => expect(f.runtime).to.equal(null),
      ],
      [
        "vllm that cannot start",
        (o) =>
          withSection(
            withSection(withSection(o, "runtime_version", ""), "runtime_version_err", "Traceback (most recent call last):\n  File \"/usr/local/sbin/vllm\", line 5\nModuleNotFoundError: No module named 'torch'\n"),
            "runtime_version_rc",
            "1\n",
          ),
        {},
        [["runtime_version", "host sim2, probe section runtime_version: /usr/local/sbin/vllm --version exited 1: Traceback (most recent call last): |   File \"/usr/local/sbin/vllm\", line 5 | ModuleNotFoundError: No module named 'torch'"]],
        (f) => expect(f.runtime).to.include({ vllmVersion: null }),
      ],
    ];
    for (const [name, mutate, extra, want, check] of table) {
      it(name, () => {
        const f = parseProbe(mutate(SIM2_OUTPUT), { ...SIM2, ...extra });
        expect(f.errors.map((e) => e.section)).to.deep.equal(want.map(([s]) => s));
        f.errors.forEach((e, i) => {
          expect(e.host).to.equal("sim2");
          const m = want[i][1];
          if (typeof m === "string") expect(e.message).to.equal(m);
          else expect(e.message).to.match(m);
        });
        check(f);
      });
    }
  });

  describe("docker runtime sections (recorded daemon output)", () => {
    const base = SIM2_OUTPUT.slice(0, SIM2_OUTPUT.indexOf("\n@@runtime\n"));
    const docker = (image: string, rest: string) => parseProbe(`${base}\n@@runtime\nkind docker\nimage ${image}\ndocker /usr/local/bin/docker\n${rest}\n@@end\n`, { ...SIM2, runtime: { kind: "docker", image } });

    it("reads identity, environment and the container's packages", () => {
      const f = docker(
        `vllm/vllm-openai@${DIGEST}`,
        `\n@@runtime_inspect\n${VLLM_INSPECT}\n\n@@runtime_inspect_err\n\n@@runtime_inspect_rc\n0\n\n@@runtime_image_id\n${IMAGE_ID}\n\n@@runtime_packages\n${PIP_LIST}\n\n@@runtime_packages_err\n\n@@runtime_packages_rc\n0\n`,
      );
      expect(f.errors).to.deep.equal([]);
      expect(f.runtime).to.deep.include({
        kind: "docker",
        image: `vllm/vllm-openai@${DIGEST}`,
        imageId: IMAGE_ID,
        repoDigests: [`vllm/vllm-openai@${DIGEST}`],
        resolvedDigest: DIGEST,
        created: "2026-10-02T18:22:41.918273551Z",
        env: { NCCL_CUMEM_ENABLE: "0", UCX_MEMTYPE_CACHE: "n", UCX_TLS: "", VLLM_USAGE_SOURCE: "production-docker-image" },
        vllmVersion: "0.29.0",
        packagesSource: "pip",
        packageCount: 14,
      });
      if (f.runtime?.kind !== "docker") throw new Error("docker runtime expected");
      expect(f.runtime.identity.ok).to.equal(true);
      expect(f.runtime.packages).to.include({ vllm: "0.29.0", torch: "2.9.0+cu128", nixl: "0.7.1", "ucx-py-cu12": "0.45.0", transformers: "4.57.1" });
    });

    it("names an image the host does not have (Docker 20.10's words)", () => {
      const f = docker(
        "sha256:" + "ab".repeat(32),
        "\n@@runtime_inspect\n\n@@runtime_inspect_err\nError response from daemon: no such image: sha256:" + "ab".repeat(32) + ": No such image: sha256:" + "ab".repeat(32) + "\n\n@@runtime_inspect_rc\n1\n",
      );
      expect(f.runtime).to.equal(null);
      expect(f.errors.map((e) => e.message)).to.deep.equal([
        `host sim2, probe section runtime_inspect: runtime.image sha256:${"ab".repeat(32)} is not on this host (Error response from daemon: no such image: sha256:${"ab".repeat(32)}: No such image: sha256:${"ab".repeat(32)}); pull or load the pinned image before discovery`,
      ]);
    });

    it("reports an image whose container cannot list packages (recorded: no python3 in the image), and its identity problem", () => {
      const noPython =
        'docker: Error response from daemon: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec: "python3": executable file not found in $PATH: unknown\n\nRun \'docker run --help\' for more information';
      const id = "sha256:4f361d8984b01d9e2ea949486408cb7b554349253545018e4b20044db1db35de";
      const f = docker(
        "narwhal-probe-record:test",
        `\n@@runtime_inspect\n${IMPORTED_INSPECT}\n\n@@runtime_inspect_err\n\n@@runtime_inspect_rc\n0\n\n@@runtime_image_id\n${id}\n` +
          `\n@@runtime_packages\n\n@@runtime_packages_err\n${noPython}\n\n@@runtime_packages_rc\n127\n` +
          `\n@@runtime_packages_meta\n\n@@runtime_packages_meta_err\n${noPython}\n\n@@runtime_packages_meta_rc\n127\n`,
      );
      expect(f.runtime).to.deep.include({ imageId: id, packages: null, vllmVersion: null, resolvedDigest: null });
      expect(f.errors.map((e) => e.section)).to.deep.equal(["runtime_packages"]);
      expect(f.errors[0].message).to.match(
        /^host sim2, probe section runtime_packages: the short-lived container of sha256:4f36\S+ could not list its Python packages: pip list exited 127: .*executable file not found in \$PATH: unknown \| {2}\| Run 'docker run --help' for more information; importlib.metadata exited 127: /,
      );
      expect(blockingProblems(f)).to.include(
        `runtime.image narwhal-probe-record:test is a mutable tag; pin an image ID (sha256:…) or a digest (repo@sha256:…) — it resolves on host sim2 to image ${id}`,
      );
    });
  });

  describe("the script itself, run by this machine's shells against fake tools", function () {
    this.timeout(60_000);
    let dir: string;
    const shells = ["dash", "bash"].filter((s) => spawnSync("sh", ["-c", `command -v ${s}`]).status === 0);

    before(() => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), "narwhal-probe-"));
      const write = (rel: string, text: string, mode = 0o644) => {
        const file = path.join(dir, rel);
        fs.mkdirSync(path.dirname(file), { recursive: true });
        fs.writeFileSync(file, text, { mode });
        return file;
      };
      // Tools the probe calls, with recorded output.
      write("bin/hostname", "#!/bin/sh\necho gpu-node-7\n", 0o755);
      write("bin/ip", "#!/bin/sh\necho '3: fab0    inet 10.1.2.7/24 brd 10.1.2.255 scope global fab0\\       valid_lft forever preferred_lft forever'\n", 0o755);
      write("bin/ss", `#!/bin/sh\ncase "$*" in *H*) echo 'LISTEN 0      4096         0.0.0.0:8100       0.0.0.0:*    users:(("python3",pid=31337,fd=27))' ;; esac\n`, 0o755);
      write(
        "bin/docker",
        `#!/bin/sh
printf '%s\\n' "$*" >> ${dir}/docker.log
case "$1 $2 $3 $4" in
  "image inspect --format {{json .}}") [ "$6" = "vllm/vllm-openai@${DIGEST}" ] || { echo "Error response from daemon: no such image: $6: No such image: $6" >&2; exit 1; }; echo '${VLLM_INSPECT}' ;;
  "image inspect --format {{.Id}}") echo ${IMAGE_ID} ;;
  "run --rm --pull never") echo '${PIP_LIST}' ;;
  *) echo "unexpected docker $*" >&2; exit 2 ;;
esac
`,
        0o755,
      );
      // A pip console script in a virtualenv, reached through a symlink on PATH: the interpreter beside it runs pip.
      write(
        "venv/bin/python3",
        `#!/bin/sh
case "$1" in
  -m) echo '${PIP_LIST}' ;;
  */vllm) echo 'INFO 11-28 10:01:12 [__init__.py:216] Automatically detected platform cuda.' >&2; echo 0.29.0 ;;
  *) exit 3 ;;
esac
`,
        0o755,
      );
      write("venv/bin/vllm", `#!${dir}/venv/bin/python3\n# -*- coding: utf-8 -*-\nimport re\nimport sys\nfrom vllm.entrypoints.cli.main import main\nif __name__ == "__main__":\n    sys.argv[0] = re.sub(r"(-script\\.pyw|\\.exe)?$", "", sys.argv[0])\n    sys.exit(main())\n`, 0o755);
      fs.symlinkSync(path.join(dir, "venv/bin/vllm"), path.join(dir, "bin/vllm"));
      // pip's form for an interpreter path too long for #!, with an interpreter that has no pip.
      write(
        "interp/python3.12",
        `#!/bin/sh
case "$1" in
  -m) echo "$0: No module named pip" >&2; exit 1 ;;
  -c) echo '[{"name": "vllm", "version": "0.28.1"}, {"name": "torch", "version": "2.8.0"}]' ;;
  *) echo 0.28.1 ;;
esac
`,
        0o755,
      );
      write("long/bin/vllm", `#!/bin/sh\n'''exec' "${dir}/interp/python3.12" "$0" "$@"\n' '''\n# -*- coding: utf-8 -*-\nimport sys\nfrom vllm.entrypoints.cli.main import main\nsys.exit(main())\n`, 0o755);
      // A checkpoint with custom code in an awkward directory name, and a device that exists.
      write(`models/it's a "model"/config.json`, json({ ...TINY_LLAMA_CONFIG, auto_map: { AutoModelForCausalLM: "modeling_tiny.TinyForCausalLM" } }));
      write(`models/it's a "model"/tokenizer_config.json`, json({ tokenizer_class: "PreTrainedTokenizerFast", eos_token: "</s>" }));
      write(`models/it's a "model"/chat_template.jinja`, "{{ messages }}");
      write("dev/kfd", "");
    });

    after(() => fs.rmSync(dir, { recursive: true, force: true }));

    function run(shell: string, opts: ProbeOptions): { stdout: string; stderr: string; status: number | null } {
      const cmd = probeCommand(opts);
      const r = spawnSync(shell, ["-c", cmd.command.replace(/^sh /, `${shell} `)], {
        input: cmd.stdin,
        encoding: "utf8",
        timeout: 30_000,
        env: { PATH: `${dir}/bin:/usr/bin:/bin`, LANG: "C.UTF-8" },
      });
      return { stdout: r.stdout, stderr: r.stderr, status: r.status };
    }

    for (const shell of shells) {
      describe(shell, () => {
        const modelDir = () => `${dir}/models/it's a "model"`;

        it("native: a console script's version and its interpreter's packages; quoted checkpoint path; devices", () => {
          const opts: ProbeOptions = {
            alias: "gpu7",
            fabricInterface: "fab0",
            modelDir: modelDir(),
            devicePaths: [`${dir}/dev/kfd`, `${dir}/dev/dri/renderD128`],
            runtime: { kind: "native" },
            plannedPorts: [{ engineId: "e1", kind: "engine", port: 8100 }],
          };
          const r = run(shell, opts);
          expect(r.status, r.stderr).to.equal(0);
          const f = parseProbe(r.stdout, opts);
          expect(f.errors).to.deep.equal([]);
          expect(f.hostname).to.equal("gpu-node-7");
          expect(f.fabric.address).to.equal("10.1.2.7");
          expect(f.model!.requirements).to.include({ trustRemoteCode: true, trustRemoteCodeReason: "config.json has auto_map (AutoModelForCausalLM)" });
          expect(f.model!.requirements.configSha256).to.equal(sha(fs.readFileSync(`${modelDir()}/config.json`)));
          expect(f.model!.chatTemplateFiles).to.deep.equal(["chat_template.jinja"]);
          expect(f.model!.generationConfig).to.equal(null);
          expect(f.portConflicts.map((c) => c.message)).to.deep.equal([
            "engine e1: planned engine HTTP port 8100 on host gpu7 is already in use by python3 (pid 31337); stop it or choose another port",
          ]);
          expect(f.devices!.missing).to.deep.equal([`${dir}/dev/dri/renderD128`]);
          expect(f.devices!.paths[0]).to.include({ path: `${dir}/dev/kfd`, present: true, type: "regular empty file" });
          expect(f.runtime).to.deep.include({
            kind: "native",
            path: `${dir}/venv/bin/vllm`,
            scriptKind: "python",
            interpreter: `${dir}/venv/bin/python3`,
            vllmVersion: "0.29.0",
            packagesSource: "pip",
          });
          expect(f.runtime!.packages).to.include({ vllm: "0.29.0", nixl: "0.7.1", "ucx-py-cu12": "0.45.0" });
        });

        it("native: pip's '''exec' form, and importlib.metadata when the environment has no pip", () => {
          const opts: ProbeOptions = { alias: "gpu7", fabricInterface: "fab0", runtime: { kind: "native", vllmCommand: `${dir}/long/bin/vllm` } };
          const f = parseProbe(run(shell, opts).stdout, opts);
          expect(f.errors).to.deep.equal([]);
          expect(f.runtime).to.deep.include({
            scriptKind: "python",
            interpreter: `${dir}/interp/python3.12`,
            vllmVersion: "0.28.1",
            packages: { torch: "2.8.0", vllm: "0.28.1" },
            packagesSource: "importlib.metadata",
          });
        });

        it("native: a vllm command that is not there", () => {
          const opts: ProbeOptions = { alias: "gpu7", fabricInterface: "fab0", runtime: { kind: "native", vllmCommand: `${dir}/nowhere/vllm` } };
          const f = parseProbe(run(shell, opts).stdout, opts);
          expect(f.errors.map((e) => e.section)).to.deep.equal(["runtime"]);
        });

        it("docker: inspect by the configured reference, packages from a container of exactly that image ID", () => {
          fs.rmSync(`${dir}/docker.log`, { force: true });
          const opts: ProbeOptions = {
            alias: "gpu7",
            fabricInterface: "fab0",
            runtime: { kind: "docker", image: `vllm/vllm-openai@${DIGEST}` },
            probeContainerName: "narwhal-probe-test",
          };
          const f = parseProbe(run(shell, opts).stdout, opts);
          expect(f.errors).to.deep.equal([]);
          expect(f.runtime).to.deep.include({ kind: "docker", imageId: IMAGE_ID, resolvedDigest: DIGEST, vllmVersion: "0.29.0" });
          expect(fs.readFileSync(`${dir}/docker.log`, "utf8").trim().split("\n")).to.deep.equal([
            `image inspect --format {{json .}} -- vllm/vllm-openai@${DIGEST}`,
            `image inspect --format {{.Id}} -- vllm/vllm-openai@${DIGEST}`,
            `run --rm --pull never --network none --name narwhal-probe-test --entrypoint python3 ${IMAGE_ID} -m pip list --format json --disable-pip-version-check`,
          ]);
        });

        it("docker: an image the host lacks stops at inspect", () => {
          fs.rmSync(`${dir}/docker.log`, { force: true });
          const opts: ProbeOptions = { alias: "gpu7", fabricInterface: "fab0", runtime: { kind: "docker", image: "sha256:" + "cd".repeat(32) } };
          const f = parseProbe(run(shell, opts).stdout, opts);
          expect(f.errors.map((e) => e.section)).to.deep.equal(["runtime_inspect"]);
          expect(f.errors[0].message).to.contain("is not on this host (Error response from daemon: no such image");
          expect(fs.readFileSync(`${dir}/docker.log`, "utf8").trim().split("\n")).to.have.length(1);
        });

        it("bounds checkpoint files and reports a missing directory", () => {
          const small: ProbeOptions = { alias: "gpu7", fabricInterface: "fab0", modelDir: modelDir(), maxFileBytes: 60 };
          const f = parseProbe(run(shell, small).stdout, small);
          expect(f.errors.map((e) => e.section)).to.deep.equal(["model_config", "model_tokenizer_config"]);
          expect(f.errors[0].message).to.match(/config.json has \d+ bytes, over the probe's bound/);
          const gone: ProbeOptions = { alias: "gpu7", fabricInterface: "fab0", modelDir: `${dir}/models/gone` };
          expect(parseProbe(run(shell, gone).stdout, gone).errors.map((e) => e.section)).to.deep.equal(["model"]);
        });
      });
    }
  });

  it("splits sections as before", () => {
    expect(splitSections("noise\n@@a\nx\n@@b_rc\n0")).to.deep.equal({ a: "x\n", b_rc: "0\n" });
  });
});
