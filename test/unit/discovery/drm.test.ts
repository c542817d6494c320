import { expect } from "chai";
import { amdDevicePaths, bdfidFunction, missingRenderNodes, parseDrmSection, pickDevicePaths, renderNodesByGpu } from "../../../lib/discovery/drm";

/** Each render node with `readlink -f` of its device link, on an MI300X host where another device has a render node too. */
const DRM = [
  "renderD128\t/sys/devices/pci0000:00/0000:00:01.1/0000:19:00.0",
  "renderD129\t/sys/devices/pci0000:00/0000:00:01.2/0000:18:00.0",
  "renderD130\t/sys/devices/pci0000:00/0000:00:1c.0/0000:03:00.0",
  "renderD131\t",
  "card0\t/sys/devices/pci0000:00/0000:00:01.2/0000:18:00.0",
  "",
].join("\n");
/** rocminfo's BDFIDs of those GPUs: 0x1800 and 0x1900. */
const GPUS = [
  { index: 0, busId: "6144" },
  { index: 1, busId: "6400" },
];

describe("discovery: ROCm render nodes from /sys/class/drm", () => {
  it("reads each render node and the PCI function its device link resolves to, skipping cards", () => {
    expect(parseDrmSection(DRM)).to.deep.equal([
      { name: "renderD128", pciAddress: "0000:19:00.0" },
      { name: "renderD129", pciAddress: "0000:18:00.0" },
      { name: "renderD130", pciAddress: "0000:03:00.0" },
      { name: "renderD131", pciAddress: null },
    ]);
  });

  const bdfids: Array<[string, string | null]> = [
    ["6144", "18:00.0"],
    ["49408", "c1:00.0"],
    ["4106", "10:01.2"],
    ["0", "00:00.0"],
    ["0x1800", null],
    ["", null],
    ["70000", null],
  ];
  for (const [bdfid, fn] of bdfids) {
    it(`reads rocminfo's BDFID ${JSON.stringify(bdfid)} as ${fn ?? "no PCI function"}`, () => expect(bdfidFunction(bdfid)).to.equal(fn));
  }

  it("maps each GPU to the render node of its PCI function, whatever order the kernel numbered them in", () => {
    const nodes = renderNodesByGpu(GPUS, parseDrmSection(DRM));
    expect([...nodes]).to.deep.equal([
      [0, "/dev/dri/renderD129"],
      [1, "/dev/dri/renderD128"],
    ]);
    expect(amdDevicePaths(nodes)).to.deep.equal(["/dev/kfd", "/dev/dri/renderD129", "/dev/dri/renderD128"]);
    // A GPU in another PCI domain: rocminfo's BDFID has none, so bus, device and function decide.
    expect([...renderNodesByGpu([{ index: 0, busId: "6144" }], parseDrmSection("renderD140\t/sys/devices/pci0001:00/0001:18:00.0\n"))]).to.deep.equal([[0, "/dev/dri/renderD140"]]);
  });

  it("names each GPU sysfs shows no render node for, with its PCI function", () => {
    const nodes = renderNodesByGpu(GPUS, parseDrmSection("renderD128\t/sys/devices/pci0000:00/0000:00:01.1/0000:19:00.0\n"));
    expect(missingRenderNodes(GPUS, nodes)).to.deep.equal([
      "AMD GPU 0 (rocminfo BDFID 6144, PCI 18:00.0) has no render node: no /sys/class/drm/renderD* links to that PCI function; is the amdgpu driver bound to it? Restore the declared device exposure before launch.",
    ]);
  });

  it("picks the wanted device paths from what the probe checked; one it did not check counts as missing", () => {
    const seen = [{ path: "/dev/kfd", present: true }, { path: "/dev/dri/renderD129", present: false }];
    expect(pickDevicePaths(seen, ["/dev/kfd", "/dev/dri/renderD129", "/dev/dri/renderD128"])).to.deep.equal([
      { path: "/dev/kfd", present: true },
      { path: "/dev/dri/renderD129", present: false },
      { path: "/dev/dri/renderD128", present: false },
    ]);
  });
});
