import { expect } from "chai";
import { checkDigest, imageIdentityFailures, judgeNativeIdentity, judgeRuntimeCheck, parseCheckLines } from "../../../lib/image-check/verdict";
import type { NativeIdentity } from "../../../lib/image-check/native-identity";
import type { RuntimeCheckRequest } from "../../../lib/image-check/python";
import { checkImageIdentity, parseImageInspect } from "../../../lib/discovery/runtime";

const WHERE = "image check of engine e1 on host sim1";
const REQUEST: RuntimeCheckRequest = {
  pins: { vllm: "0.29.0", nixl: "0.7.1" },
  kvTransferConfig: { kv_connector: "NixlConnector", kv_role: "kv_both" },
  trustRemoteCode: false,
  dsRequired: false,
  model: "/models/tiny",
  tokenizer: "/models/tiny",
};

const V1 = "/usr/lib/python3/dist-packages/vllm/distributed/kv_transfer/kv_connector/v1";
const line = (fields: Record<string, unknown>) => `NARWHAL_CHECK ${JSON.stringify(fields)}`;
const PASSING = [
  line({ check: "custom-code", ok: true, required: false, trusted: false, reasons: [] }),
  line({ check: "packages", ok: true, observed: { nixl: "0.7.1", vllm: "0.29.0" }, mismatches: [] }),
  line({ check: "vllm-api-version", ok: true, version: "0.29.0" }),
  line({ check: "connector", ok: true, name: "NixlConnector", resolved: "vllm.distributed.kv_transfer.kv_connector.v1.nixl_connector.NixlConnector" }),
  line({ check: "ds-layout", ok: true, required: false }),
  line({ check: "tokenizer", ok: true, path: "/models/tiny", loaded: "transformers.LlamaTokenizerFast" }),
  line({ check: "nixl-versions", ok: true, connectorVersion: 9, connectorSource: `${V1}/nixl/metadata.py`, searched: V1, nixlVersion: "0.7.1", nixlDistribution: "nixl" }),
];
/** The passing output with one check's line replaced. */
function withLine(check: string, fields: Record<string, unknown>): string {
  return PASSING.map((l) => (l.includes(`"check":"${check}"`) ? line({ check, ...fields }) : l)).join("\n");
}

describe("image check: reading the runtime check's output", () => {
  it("keeps only well-formed check lines, whatever else the runtime prints", () => {
    const out = ["WARNING: something on stdout", PASSING[0], "NARWHAL_CHECK {\"check\": \"packages\", \"ok\"", "NARWHAL_CHECK {\"no\": 1}", PASSING[2]].join("\n");
    expect(parseCheckLines(out).map((l) => l.check)).to.deep.equal(["custom-code", "vllm-api-version"]);
  });

  it("passes when every check passed and the runtime exited 0, with what each one found", () => {
    const { findings, failures } = judgeRuntimeCheck(WHERE, REQUEST, { exitStatus: 0, stdout: PASSING.join("\n"), stderr: "" }, "/usr/bin/python3");
    expect(failures).to.deep.equal([]);
    expect(findings).to.deep.equal({
      vllmApiVersion: "0.29.0",
      packages: { nixl: "0.7.1", vllm: "0.29.0" },
      connector: "vllm.distributed.kv_transfer.kv_connector.v1.nixl_connector.NixlConnector",
      tokenizer: "transformers.LlamaTokenizerFast",
      dsLayout: null,
      customCode: { required: false, trusted: false, reasons: [] },
      nixl: { connectorVersion: 9, connectorSource: `${V1}/nixl/metadata.py`, version: "0.7.1", distribution: "nixl" },
    });
  });

  const cases: Array<[string, string, number, Array<[string, string]>]> = [
    [
      "a pinned package at another version, and one not installed",
      withLine("packages", { ok: false, observed: { nixl: null, vllm: "0.28.0" }, mismatches: [{ package: "nixl", expected: "0.7.1", found: null }, { package: "vllm", expected: "0.29.0", found: "0.28.0" }] }),
      1,
      [
        ["package", "package nixl is pinned to 0.7.1 but the runtime has no such package installed"],
        ["package", "package vllm is pinned to 0.29.0 but the runtime has 0.28.0"],
      ],
    ],
    [
      "a tokenizer that needs custom code the plan does not trust",
      withLine("tokenizer", { ok: false, error: "ValueError: The repository /models/tiny contains custom code which must be executed" }),
      1,
      [["tokenizer", "tokenizer /models/tiny did not load with trust_remote_code=False: ValueError: The repository /models/tiny contains custom code which must be executed"]],
    ],
    [
      "custom code in the checkpoint without --trust-remote-code",
      withLine("custom-code", { ok: false, required: true, trusted: false, reasons: ["config.json has auto_map"] }),
      1,
      [["custom-code", "the checkpoint needs --trust-remote-code (config.json has auto_map) but the plan does not set it; rerun discovery so the plan adds it"]],
    ],
    [
      "a connector the runtime cannot resolve",
      withLine("connector", { ok: false, error: "ValueError: Unsupported connector type: NixlConnector" }),
      1,
      [["connector", "connector NixlConnector did not resolve through KVConnectorFactory: ValueError: Unsupported connector type: NixlConnector"]],
    ],
    [
      "a conv-state layout other than DS where the model needs DS",
      withLine("ds-layout", { ok: false, required: true, layout: "SD" }),
      1,
      [["ds-layout", "the model keeps a convolutional SSM state, which needs VLLM_SSM_CONV_STATE_LAYOUT=DS, but the runtime resolves SD"]],
    ],
    [
      "no vllm to import",
      withLine("vllm-api-version", { ok: false, error: "ModuleNotFoundError: No module named 'vllm'" }),
      1,
      [["api-version", "vllm.version.__version__ could not be read: ModuleNotFoundError: No module named 'vllm'"]],
    ],
    [
      "a vLLM that declares no NIXL connector version, and no nixl distribution",
      withLine("nixl-versions", { ok: false, connectorVersion: null, connectorSource: null, searched: V1, nixlVersion: null, nixlDistribution: null }),
      1,
      [
        ["nixl", `the runtime's vLLM (${V1}) defines no NIXL_CONNECTOR_VERSION, so the engine contract's connector_version cannot be declared; use a vLLM with the NIXL connector (0.29.0 has it in nixl/metadata.py)`],
        ["nixl", "the runtime has no nixl (or nixl-rocm) distribution: vLLM's NixlConnector needs it, and the engine contract's transfer_version is its version; install NIXL into the runtime"],
      ],
    ],
    [
      "a connector version that is not a literal",
      withLine("nixl-versions", { ok: false, error: "ValueError: malformed node or string on line 2: <ast.Call object at 0x7f>" }),
      1,
      [["nixl", "the NIXL versions could not be read: ValueError: malformed node or string on line 2: <ast.Call object at 0x7f>"]],
    ],
    [
      "a runtime that crashed after two checks",
      PASSING.slice(0, 2).join("\n"),
      139,
      [["runtime", "the runtime check (/usr/bin/python3) exited 139 before reporting vllm-api-version, connector, ds-layout, tokenizer, nixl-versions: line 1 | line 2 | Segmentation fault"]],
    ],
    [
      "a runtime check that ran out of time",
      "",
      124,
      [["runtime", "the runtime check (/usr/bin/python3) timed out (exit 124) before reporting custom-code, packages, vllm-api-version, connector, ds-layout, tokenizer, nixl-versions: line 1 | line 2 | Segmentation fault"]],
    ],
    [
      "a runtime that exits non-zero although every check passed",
      PASSING.join("\n"),
      3,
      [["runtime", "the runtime check (/usr/bin/python3) exited 3 although every check passed: line 1 | line 2 | Segmentation fault"]],
    ],
  ];
  for (const [what, stdout, exitStatus, expected] of cases) {
    it(`names the failing check: ${what}`, () => {
      const { failures } = judgeRuntimeCheck(WHERE, REQUEST, { exitStatus, stdout, stderr: "line 0\nline 1\nline 2\nSegmentation fault\n" }, "/usr/bin/python3");
      expect(failures).to.deep.equal(expected.map(([kind, message]) => ({ kind, message: `${WHERE}: ${message}` })));
    });
  }

  it("reports no version or classes from checks that failed", () => {
    const { findings } = judgeRuntimeCheck(WHERE, REQUEST, { exitStatus: 1, stdout: withLine("vllm-api-version", { ok: false, error: "x" }), stderr: "" }, "p");
    expect(findings.vllmApiVersion).to.equal(null);
    expect(findings.nixl).to.deep.equal({ connectorVersion: 9, connectorSource: `${V1}/nixl/metadata.py`, version: "0.7.1", distribution: "nixl" });
    expect(judgeRuntimeCheck(WHERE, REQUEST, { exitStatus: 1, stdout: withLine("nixl-versions", { ok: false, connectorVersion: 9, nixlVersion: null }), stderr: "" }, "p").findings.nixl).to.equal(null);
    expect(findings.connector).to.equal("vllm.distributed.kv_transfer.kv_connector.v1.nixl_connector.NixlConnector");
  });
});

describe("image check: native runtime identity", () => {
  const identity: NativeIdentity = {
    command: "vllm",
    path: "/opt/venv/bin/vllm",
    sha256: "sha256:" + "ab".repeat(32),
    scriptKind: "python",
    interpreter: "/opt/venv/bin/python3",
    interpreterSource: "console-script",
    versionExit: 0,
    versionOutput: "INFO 01-01 loading\n0.29.0",
  };

  it("accepts the pinned version from --version and the same version from the runtime's Python", () => {
    expect(judgeNativeIdentity(WHERE, identity, "0.29.0", "0.29.0")).to.deep.equal({ cliVersion: "0.29.0", failures: [] });
  });

  const cases: Array<[string, Partial<NativeIdentity>, string | null, string[]]> = [
    ["a command not on the PATH", { scriptKind: "missing", path: null }, null, ['runtime.vllmCommand "vllm" is not an executable on the login\'s PATH; install vLLM or set runtime.vllmCommand to its path']],
    ["another vLLM than the plan was derived from", { versionOutput: "0.29.1" }, null, ["/opt/venv/bin/vllm --version reports 0.29.1 but the plan was derived from vLLM 0.29.0; rerun discovery after changing the runtime"]],
    ["a failing --version", { versionExit: 1, versionOutput: "Traceback\nImportError: libcudart.so.12" }, null, ["/opt/venv/bin/vllm --version exited 1: Traceback | ImportError: libcudart.so.12"]],
    [
      "a Python that imports another vLLM than the launcher's",
      { scriptKind: "shell", interpreter: "/usr/bin/python3", interpreterSource: "login-python3" },
      "0.28.0",
      [
        "/usr/bin/python3 imports vLLM 0.28.0 but /opt/venv/bin/vllm --version reports 0.29.0: the check ran another environment than the engine's; set runtime.vllmCommand to the vllm console script of the environment the engine runs in",
      ],
    ],
    ["a wrapper with no python3 on the login", { scriptKind: "shell", interpreter: null, interpreterSource: "login-python3" }, null, ["/opt/venv/bin/vllm is not a Python console script and the login has no python3 to run the runtime check"]],
    ["a console script without its interpreter", { interpreter: null }, null, ["/opt/venv/bin/vllm is a Python console script but no interpreter was found beside it or in its #! line"]],
  ];
  for (const [what, change, api, messages] of cases) {
    it(`fails the identity on ${what}`, () => {
      expect(judgeNativeIdentity(WHERE, { ...identity, ...change }, "0.29.0", api).failures).to.deep.equal(messages.map((m) => ({ kind: "identity", message: `${WHERE}: ${m}` })));
    });
  }
});

describe("image check: image identity and digest", () => {
  const inspect = parseImageInspect(JSON.stringify({ Id: `sha256:${"c".repeat(64)}`, RepoDigests: [`vllm/vllm-openai@sha256:${"d".repeat(64)}`] }));

  it("turns the runbook's identity rule into identity failures", () => {
    expect(imageIdentityFailures(WHERE, checkImageIdentity(`sha256:${"c".repeat(64)}`, inspect, "sim1"))).to.deep.equal([]);
    const [failure] = imageIdentityFailures(WHERE, checkImageIdentity(`sha256:${"e".repeat(64)}`, inspect, "sim1"));
    expect(failure).to.deep.equal({
      kind: "identity",
      message: `${WHERE}: runtime.image sha256:${"e".repeat(64)} resolves on host sim1 to image sha256:${"c".repeat(64)}; the configured image ID must equal the inspected .Id — load the pinned image or rerun discovery`,
    });
  });

  it("digests what a check certifies, not when it ran", () => {
    const findings = judgeRuntimeCheck(WHERE, REQUEST, { exitStatus: 0, stdout: PASSING.join("\n"), stderr: "" }, "p").findings;
    const plan = `sha256:${"1".repeat(64)}`;
    const a = checkDigest(plan, { kind: "native", path: "/opt/venv/bin/vllm" }, findings);
    expect(checkDigest(plan, { path: "/opt/venv/bin/vllm", kind: "native" }, { ...findings })).to.equal(a);
    expect(checkDigest(`sha256:${"2".repeat(64)}`, { kind: "native", path: "/opt/venv/bin/vllm" }, findings)).to.not.equal(a);
    expect(checkDigest(plan, { kind: "native", path: "/opt/venv/bin/vllm" }, { ...findings, vllmApiVersion: "0.29.1" })).to.not.equal(a);
  });
});
