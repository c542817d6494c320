/**
 * The docker host of the simulated fleet (sim/hosts/docker.ts): `simdock`, a simulated NVIDIA host that
 * runs its own Docker Engine. Containers started through its login must live in the host's namespaces
 * (fabric address, /models, fake /dev nodes), `--gpus` must give a container its selected GPUs only,
 * and `down` must leave nothing behind, not even a container with a network of its own.
 *
 * Takes simdock down once, brings it back, and takes it down at the end: do not run it at the same time
 * as test/e2e/docker-cli.test.ts, which deploys onto simdock.
 */
import { expect } from "chai";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import { request } from "undici";
import { loadDockerImage, simDown, simStatus, simUp, sshExec } from "../../sim/hosts";
import type { SimHost } from "../../sim/hosts";
import { buildSimImage } from "../../sim/image/build";
import { buildTopology } from "../../sim/topology";

const HOST = "simdock";
const PORT = 8490;

describe("sim docker host", function () {
  this.timeout(120_000);
  let host: SimHost;
  let image: string;

  const sh = async (command: string) => {
    const r = await sshExec(host, command, { timeoutMs: 60_000 });
    expect(r.code, `${command}: ${r.stderr}`).to.equal(0);
    return r.stdout.trim();
  };

  before(async function () {
    this.timeout(180_000);
    [host] = (await simUp({ dockerHosts: [HOST], aliases: [HOST] })).hosts as [SimHost];
    image = buildSimImage({ log: () => undefined }).id;
    await loadDockerImage(HOST, image);
  });

  // The docker host is outside the numbered fleet that other files rebuild from simFleet(): leave none behind.
  after(async () => {
    if (host) await simDown({ aliases: [HOST] });
  });

  it("is named in the topology beside the numbered hosts, and only when asked for", () => {
    const t = buildTopology({ hosts: 2, dockerHosts: [HOST], topologyFile: null });
    expect(t.hosts.map((h) => [h.alias, h.address, h.layout.name, Boolean(h.dockerEngine)])).to.deep.equal([
      ["sim1", "198.18.0.11", "h100:2", false],
      ["sim2", "198.18.0.12", "h100:2", false],
      [HOST, "198.18.0.251", "h100:2", true],
    ]);
    expect(buildTopology({ hosts: 2, topologyFile: null }).hosts.map((h) => h.alias)).to.deep.equal(["sim1", "sim2"]);
    expect(() => buildTopology({ dockerHosts: ["simdock2"], topologyFile: null })).to.throw(/dockerHosts names simdock2; the docker hosts are simdock/);
  });

  it("answers its login's docker CLI with a daemon of its own, not the machine's", async () => {
    expect(host.dockerEngine).to.equal(true);
    expect(await sh("docker info --format '{{.Name}} {{.DockerRootDir}}'")).to.equal(`${HOST} ${host.dir}/docker`);
    const machine = spawnSync("docker", ["info", "--format", "{{.DockerRootDir}}"], { encoding: "utf8" }).stdout.trim();
    expect(machine).not.to.equal(`${host.dir}/docker`);
    expect(await sh(`docker image inspect --format '{{.Id}}' ${image}`)).to.equal(image);
  });

  it("runs --network host containers on the host's fabric address, with the host's /models mounted", async () => {
    const server = `require('http').createServer((q, s) => s.end(require('fs').readFileSync('/model/config.json'))).listen(${PORT}, '${host.address}')`;
    await sh(
      `docker run -d --network host --mount type=bind,source=${host.modelDir},target=/model,readonly --entrypoint /usr/bin/node ${image} -e "${server}"`,
    );
    let body = "";
    for (let i = 0; i < 50 && body === ""; i++) {
      body = await request(`http://${host.address}:${PORT}/`).then((r) => r.body.text(), () => "");
      if (body === "") await new Promise((r) => setTimeout(r, 100));
    }
    expect(body).to.equal(fs.readFileSync(`${host.modelDirOnMachine}/config.json`, "utf8"));
  });

  it("gives a --gpus container its selected GPU's device node only, and refuses an unknown GPU as the toolkit does", async () => {
    const devs = await sh(`docker run --rm --gpus '"device=1"' --entrypoint /usr/bin/node ${image} -e "console.log(process.env.NVIDIA_VISIBLE_DEVICES, require('fs').readdirSync('/dev').filter((n) => n.startsWith('nvidia')).sort().join(' '))"`);
    expect(devs).to.equal("1 nvidia-uvm nvidia-uvm-tools nvidia1 nvidiactl");
    expect(fs.readFileSync(`${host.dir}/nvidia-hook.log`, "utf8")).to.match(/NVIDIA_VISIBLE_DEVICES=1 devices: \/dev\/nvidiactl \/dev\/nvidia-uvm \/dev\/nvidia-uvm-tools \/dev\/nvidia1\n$/);
    const byUuid = await sh(`docker run --rm --gpus '"device=${host.gpus[0].uuid}"' --entrypoint /usr/bin/node ${image} -e "console.log(require('fs').existsSync('/dev/nvidia0'), require('fs').existsSync('/dev/nvidia1'))"`);
    expect(byUuid).to.equal("true false");

    const r = await sshExec(host, `docker run --rm --gpus '"device=7"' --entrypoint /usr/bin/node ${image} -e 1`, { timeoutMs: 60_000 });
    expect(r.code).not.to.equal(0);
    expect(r.stderr).to.include("nvidia-container-cli: device error: 7: unknown device");
  });

  it("down removes the daemon and every container, even one with a network of its own; up builds it afresh", async () => {
    await sh(`docker run -d --network none --entrypoint /usr/bin/node ${image} -e "setInterval(() => {}, 1000)"`);
    const daemon = (await simStatus()).hosts.find((h) => h.alias === HOST)!.dockerdPid!;
    expect(daemon).to.be.a("number");
    const cgroups = () => fs.readdirSync("/sys/fs/cgroup").filter((c) => fs.existsSync(`/sys/fs/cgroup/${c}/narwhal-sim-${HOST}`));
    expect(cgroups()).not.to.deep.equal([]);

    await simDown({ aliases: [HOST] });
    // Gone, or a zombie its reaper has not collected yet.
    const stat = fs.existsSync(`/proc/${daemon}/stat`) ? fs.readFileSync(`/proc/${daemon}/stat`, "utf8") : ") Z";
    expect(stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3)).to.be.oneOf(["Z", "X"]);
    expect(cgroups()).to.deep.equal([]);
    expect(spawnSync("ip", ["netns", "list"], { encoding: "utf8" }).stdout).not.to.include(`nw-${HOST}`);
    expect(spawnSync("pgrep", ["-f", "setInterval\\(\\(\\) => \\{\\}, 1000\\)"], { encoding: "utf8" }).stdout).to.equal("");

    const again = await simUp({ dockerHosts: [HOST], aliases: [HOST] });
    expect(again.actions[HOST]).to.equal("started");
    host = again.hosts[0]!;
    expect(await sh("docker ps -aq; docker images -q")).to.equal("");
  });
});
