import { expect } from "chai";
import { runInHost, setRdmaPortState, simDown, simUp, spawnInHost, syncRdmaGids } from "../../sim/hosts";

/**
 * The simulated HCA and the ib_write_bw stand-in inside two hosts of this file's own (sim40 and sim41),
 * run as an operator would run perftest: what each side prints and its exit status, for a good run and
 * for each failure the reference lists (rdma-facts §2.4).
 */
const HOSTS = ["sim40", "sim41"];
const SERVER_LOG = "/tmp/ib_write_bw-server.log";

/** Starts the server on sim41 (its output and exit status into SERVER_LOG), waits until it listens or exits. */
async function server(args: string): Promise<void> {
  spawnInHost("sim41", ["sh", "-c", `ib_write_bw ${args} >${SERVER_LOG} 2>&1; echo "exit $?" >>${SERVER_LOG}`]);
  await runInHost("sim41", `for i in $(seq 100); do ss -Hltn 'sport = :18515' | grep -q . && exit 0; grep -q '^exit ' ${SERVER_LOG} 2>/dev/null && exit 0; sleep 0.1; done; exit 1`);
}

async function serverDone(): Promise<{ log: string; exit: number }> {
  await runInHost("sim41", `for i in $(seq 150); do grep -q '^exit ' ${SERVER_LOG} 2>/dev/null && exit 0; sleep 0.1; done; exit 1`);
  const text = (await runInHost("sim41", ["cat", SERVER_LOG])).stdout;
  const m = /exit (\d+)\n$/.exec(text)!;
  return { log: text.slice(0, m.index), exit: Number(m[1]) };
}

async function client(args: string): Promise<{ stdout: string; stderr: string; code: number }> {
  return runInHost("sim40", `ib_write_bw ${args} 198.18.0.51`, { allowFail: true, timeoutMs: 60_000 });
}

describe("sim: the simulated HCA and the ib_write_bw stand-in", function () {
  this.timeout(120_000);
  before(async () => {
    await simUp({ hosts: 41, aliases: HOSTS, rdma: { sim40: ["mlx5_0"], sim41: ["mlx5_0"] } });
  });
  after(async () => {
    await simDown({ aliases: HOSTS });
  });

  it("shows the HCA as Linux does: /sys/class/infiniband beside the kernel's own classes, uverbs, /dev/infiniband, the PCI function", async () => {
    const out = (
      await runInHost(
        "sim40",
        "ls /sys/class | grep -c . ; ls /sys/class/net; readlink /sys/class/infiniband/mlx5_0; cat /sys/class/infiniband_verbs/uverbs0/ibdev; ls /sys/class/infiniband/mlx5_0/device/net; " +
          "cat /sys/class/infiniband/mlx5_0/ports/1/gids/3 /sys/class/infiniband/mlx5_0/ports/1/gid_attrs/types/3 /sys/bus/pci/devices/0000:17:00.0/vendor; ls /dev/infiniband; " +
          "cat /sys/class/infiniband/mlx5_0/ports/1/gid_attrs/types/4 2>&1 || true",
      )
    ).stdout.split("\n");
    expect(Number(out[0])).to.be.greaterThan(5);
    expect(out).to.include.members([
      "fab0",
      "../../bus/pci/devices/0000:17:00.0/infiniband/mlx5_0",
      "mlx5_0",
      "0000:0000:0000:0000:0000:ffff:c612:0032",
      "RoCE v2",
      "0x15b3",
      "rdma_cm",
      "uverbs0",
      "cat: /sys/class/infiniband/mlx5_0/ports/1/gid_attrs/types/4: No such file or directory",
    ]);
  });

  it("runs a test as perftest does: the server's banner and the client's row on both sides, exit 0", async () => {
    await server("-d mlx5_0 -x 3 -s 4096 -n 1000 -F --report_gbits");
    const c = await client("-d mlx5_0 -x 3 -s 4096 -n 1000 -F --report_gbits");
    const s = await serverDone();
    expect([c.code, c.stderr, s.exit]).to.deep.equal([0, "", 0]);
    const row = /^ 4096 {7}1000 {13}\d+\.\d\d +\d+\.\d\d +\t\t {5}\d\.\d{6}\n/m.exec(c.stdout);
    expect(row, c.stdout).to.not.equal(null);
    expect(s.log.startsWith("\n************************************\n* Waiting for client to connect... *\n************************************\n")).to.equal(true);
    expect(s.log).to.include(row![0]);
    expect(c.stdout).to.include(" CQ Moderation   : 100\n").and.include(" Mtu             : 1024[B]\n").and.include(" TX depth        : 128\n");
    expect(s.log).to.not.include("TX depth");
    expect(c.stdout).to.include(" GID: 00:00:00:00:00:00:00:00:00:00:255:255:198:18:00:50\n");
  });

  it("fails a down port before the server's banner, and a client with no server to reach, with perftest's messages", async () => {
    setRdmaPortState("sim41", "down");
    try {
      await server("-d mlx5_0 -x 3");
      expect(await serverDone()).to.deep.equal({ exit: 1, log: " Port number 1 state is Down\n Couldn't set the link layer\n Couldn't get context for the device\n" });
    } finally {
      setRdmaPortState("sim41", "active");
    }
    expect(await client("-d mlx5_0 -x 3")).to.deep.include({ code: 1, stderr: "Couldn't connect to 198.18.0.51:18515\n Unable to init the socket connection\n" });
    expect(await client("-d mlx5_9 -x 3")).to.deep.include({ code: 1, stderr: "IB device mlx5_9 not found\n Unable to find the Infiniband/RoCE device\n" });
  });

  it("fails GID problems where perftest does: families that differ (an empty slot is no IPv4 GID), an empty slot at RTR", async () => {
    // perftest checks the GIDs' families before it moves the QP to RTR.
    await server("-d mlx5_0 -x 3");
    expect((await client("-d mlx5_0 -x 9")).stderr).to.equal("\n Found Incompatibility issue with GID types.\n Please Try to use a different IP version.\n\n");
    await serverDone();

    await server("-d mlx5_0 -x 1");
    const empty = await client("-d mlx5_0 -x 9");
    expect(empty.code).to.equal(1);
    expect(empty.stderr).to.match(/^Failed to modify QP \d+ to RTR\n Unable to Connect the HCA's through the link\n$/);
    expect((await serverDone()).log).to.match(/ Failed to exchange data between server and clients\n$/);

    await server("-d mlx5_0 -x 3");
    const family = await client("-d mlx5_0 -x 0");
    expect(family.stderr).to.equal("\n Found Incompatibility issue with GID types.\n Please Try to use a different IP version.\n\n");
    expect(await serverDone()).to.deep.include({ exit: 1 });
  });

  it("keeps the GID table in step with the fabric interface's addresses when asked", async () => {
    await runInHost("sim40", ["ip", "addr", "add", "198.18.0.150/24", "dev", "fab0"]);
    try {
      expect(await syncRdmaGids("sim40")).to.deep.equal(["198.18.0.50", "198.18.0.150"]);
      expect((await runInHost("sim40", "cat /sys/class/infiniband/mlx5_0/ports/1/gids/5")).stdout).to.equal("0000:0000:0000:0000:0000:ffff:c612:0096\n");
    } finally {
      await runInHost("sim40", ["ip", "addr", "del", "198.18.0.150/24", "dev", "fab0"]);
      await syncRdmaGids("sim40");
    }
    expect((await runInHost("sim40", "cat /sys/class/infiniband/mlx5_0/ports/1/gids/5")).stdout).to.equal("0000:0000:0000:0000:0000:0000:0000:0000\n");
  });
});
