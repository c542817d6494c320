import { expect } from "chai";
import { deviceCheck, devicePathProblem, parseDeviceSection, RESTORE_DEVICES } from "../../../lib/discovery/devices";

/** The probe's devices section on a ROCm host with RDMA declared but not exposed. */
const ROCM = [
  "present\t/dev/kfd\t666\troot\trender\tcharacter special file",
  "present\t/dev/dri/renderD128\t660\troot\trender\tcharacter special file",
  "present\t/dev/dri\t755\troot\troot\tdirectory",
  "missing\t/dev/infiniband/uverbs0",
  "",
].join("\n");

describe("discovery: declared device paths", () => {
  it("reads present paths with their mode, owner, group and type, and names the missing ones", () => {
    const got = parseDeviceSection(ROCM, ["/dev/kfd", "/dev/dri/renderD128", "/dev/dri", "/dev/infiniband/uverbs0"], "sim3");
    expect(got.paths).to.deep.equal([
      { path: "/dev/kfd", present: true, mode: "666", owner: "root", group: "render", type: "character special file" },
      { path: "/dev/dri/renderD128", present: true, mode: "660", owner: "root", group: "render", type: "character special file" },
      { path: "/dev/dri", present: true, mode: "755", owner: "root", group: "root", type: "directory" },
      { path: "/dev/infiniband/uverbs0", present: false },
    ]);
    expect(got.missing).to.deep.equal(["/dev/infiniband/uverbs0"]);
    expect(got.message).to.equal("Restore the declared device exposure before launch. Missing on host sim3: /dev/infiniband/uverbs0.");
  });

  const table: Array<[string, string, string[], string | null]> = [
    ["every path present (a host without stat still reports presence)", "present\t/dev/nvidia0\npresent\t/dev/nvidiactl\n", [], null],
    [
      "several missing, in the declared order",
      "missing\t/dev/kfd\nmissing\t/dev/dri/renderD128\npresent\t/dev/nvidia0\n",
      ["/dev/kfd", "/dev/dri/renderD128"],
      `${RESTORE_DEVICES} Missing: /dev/kfd, /dev/dri/renderD128.`,
    ],
    ["a path with spaces", "missing\t/dev/disk/by-id/odd name\n", ["/dev/disk/by-id/odd name"], `${RESTORE_DEVICES} Missing: /dev/disk/by-id/odd name.`],
    ["nothing declared", "", [], null],
  ];
  for (const [name, text, missing, message] of table) {
    it(name, () => {
      const got = parseDeviceSection(text);
      expect(got.missing).to.deep.equal(missing);
      expect(got.message).to.equal(message);
    });
  }

  it("notices a declared path the probe did not report (cut-short output)", () => {
    expect(() => parseDeviceSection("present\t/dev/kfd\n", ["/dev/kfd", "/dev/dri/renderD128"])).to.throw("the probe did not report /dev/dri/renderD128");
  });

  it("refuses a line it does not know", () => {
    expect(() => parseDeviceSection("stat: cannot stat\n")).to.throw('unexpected device line "stat: cannot stat"');
  });

  it("judges observations built elsewhere the same way", () => {
    expect(deviceCheck([{ path: "/dev/kfd", present: false }], "sim1").message).to.equal(
      "Restore the declared device exposure before launch. Missing on host sim1: /dev/kfd.",
    );
  });

  it("accepts only absolute, single-line paths on the probe's command line", () => {
    expect(devicePathProblem("/dev/kfd")).to.equal(undefined);
    expect(devicePathProblem("dev/kfd")).to.equal('device path "dev/kfd" is not absolute');
    expect(devicePathProblem("/dev/a\nb")).to.equal('device path "/dev/a\\nb" contains a tab or newline');
  });
});
