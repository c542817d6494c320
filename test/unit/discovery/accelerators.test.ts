import { expect } from "chai";
import { inventoryFrom, NO_GPU_NOTICE, parseNvidiaSmi, parseRocminfo, scanPci } from "../../../lib/discovery/accelerators";

const PCI_NVIDIA = [
  "0000:00:00.0 0x060000 0x8086", // host bridge: not a GPU
  "0000:03:00.0 0x020000 0x15b3", // network controller
  "0000:18:00.0 0x030200 0x10de",
  "0000:19:00.0 0x030200 0x10de",
].join("\n");
const NVIDIA_SMI = [
  "0, NVIDIA H100 80GB HBM3, 00000000:18:00.0, GPU-1a2b3c4d-0000-0000-0000-000000000001, 81559 MiB",
  "1, NVIDIA H100 80GB HBM3, 00000000:19:00.0, GPU-1a2b3c4d-0000-0000-0000-000000000002, 81559 MiB",
].join("\n");
const ROCMINFO = `ROCk module is loaded
=====================
HSA Agents
==========
*******
Agent 1
*******
  Name:                    AMD EPYC 9654 96-Core Processor
  Uuid:                    CPU-XX
  Marketing Name:          AMD EPYC 9654 96-Core Processor
*******
Agent 2
*******
  Name:                    gfx942
  Uuid:                    GPU-5f0e1d2c3b4a5968
  Marketing Name:          AMD Instinct MI300X
  BDFID:                   6144
*******
Agent 3
*******
  Name:                    gfx942
  Uuid:                    GPU-5f0e1d2c3b4a5969
  Marketing Name:          AMD Instinct MI300X
  BDFID:                   6400
`;

describe("discovery: accelerators", () => {
  it("keeps only display controllers from GPU vendors in the PCI scan", () => {
    expect(scanPci(PCI_NVIDIA)).to.deep.equal([
      { bdf: "0000:18:00.0", vendor: "nvidia" },
      { bdf: "0000:19:00.0", vendor: "nvidia" },
    ]);
  });

  it("reads product, bus ids, UUIDs and memory from nvidia-smi", () => {
    const rows = parseNvidiaSmi(NVIDIA_SMI);
    expect(rows).to.have.length(2);
    expect(rows[1]).to.deep.equal({
      index: 1,
      name: "NVIDIA H100 80GB HBM3",
      busId: "00000000:19:00.0",
      uuid: "GPU-1a2b3c4d-0000-0000-0000-000000000002",
      memoryMiB: 81559,
    });
  });

  it("reads only gfx agents from rocminfo, with their marketing name", () => {
    const rows = parseRocminfo(ROCMINFO);
    expect(rows.map((r) => [r.index, r.name, r.uuid])).to.deep.equal([
      [0, "AMD Instinct MI300X", "GPU-5f0e1d2c3b4a5968"],
      [1, "AMD Instinct MI300X", "GPU-5f0e1d2c3b4a5969"],
    ]);
  });

  it("combines the scan and the vendor tool", () => {
    const inv = inventoryFrom({ pci: PCI_NVIDIA, nvidia: NVIDIA_SMI });
    expect(inv.vendor).to.equal("nvidia");
    expect(inv.product).to.equal("NVIDIA H100 80GB HBM3");
    expect(inv.gpus.map((g) => g.index)).to.deep.equal([0, 1]);
    expect(inv.notice).to.equal(undefined);
  });

  it("gives each AMD GPU the render node sysfs links to its PCI function, and NVIDIA GPUs none", () => {
    const drm = "renderD128\t/sys/devices/pci0000:00/0000:00:01.1/0000:19:00.0\nrenderD129\t/sys/devices/pci0000:00/0000:00:01.2/0000:18:00.0\n";
    const amd = inventoryFrom({ pci: "0000:18:00.0 0x038000 0x1002\n0000:19:00.0 0x038000 0x1002\n", rocm: ROCMINFO, drm });
    expect(amd.gpus.map((g) => [g.index, g.busId, g.renderNode])).to.deep.equal([
      [0, "6144", "/dev/dri/renderD129"],
      [1, "6400", "/dev/dri/renderD128"],
    ]);
    const half = inventoryFrom({ pci: "0000:18:00.0 0x038000 0x1002\n", rocm: ROCMINFO, drm: drm.split("\n")[0] });
    expect(half.gpus.map((g) => g.renderNode)).to.deep.equal([undefined, "/dev/dri/renderD128"]);
    expect(inventoryFrom({ pci: PCI_NVIDIA, nvidia: NVIDIA_SMI, drm }).gpus.every((g) => !("renderNode" in g))).to.equal(true);
  });

  it("says why when no GPU is exposed", () => {
    const inv = inventoryFrom({ pci: "0000:00:00.0 0x060000 0x8086\n" });
    expect(inv).to.deep.equal({ vendor: "none", product: null, gpus: [], notice: NO_GPU_NOTICE });
  });

  it("flags GPUs on the bus that the vendor tool does not list", () => {
    const inv = inventoryFrom({ pci: PCI_NVIDIA, nvidia: "" });
    expect(inv.notice).to.equal("PCI shows nvidia GPUs but nvidia-smi lists none: is the driver loaded?");
  });
});
