/**
 * Reads what the image check's steps printed and decides: every failure names its kind (identity,
 * package, tokenizer, ...), the engine and host, and what was found against what was expected.
 */
import { sha256Json } from "../digest";
import { parseVllmVersion } from "../discovery/runtime";
import type { ImageIdentityCheck } from "../discovery/runtime";
import type { NativeIdentity } from "./native-identity";
import { CHECK_LINE_PREFIX, type RuntimeCheckRequest } from "./python";

export const CHECK_NAMES = ["custom-code", "packages", "vllm-api-version", "connector", "ds-layout", "tokenizer", "nixl-versions"] as const;
export type CheckName = (typeof CHECK_NAMES)[number];

/** One `NARWHAL_CHECK {...}` line of the runtime check. */
export interface CheckLine {
  readonly check: string;
  readonly ok: boolean;
  readonly error?: string;
  readonly [field: string]: unknown;
}

/** Which check failed; `login` is the SSH login itself, `runtime` a check that stopped without a result. */
export type FailureKind = "identity" | "package" | "custom-code" | "api-version" | "connector" | "ds-layout" | "tokenizer" | "nixl" | "runtime" | "login";

export interface CheckFailure {
  readonly kind: FailureKind;
  readonly message: string;
}

/** What the runtime itself reported, from the checks that passed. */
export interface RuntimeFindings {
  readonly vllmApiVersion: string | null;
  /** Pinned package -> the version the runtime has (null: not installed). */
  readonly packages: Readonly<Record<string, string | null>>;
  /** `module.Class` KVConnectorFactory resolved. */
  readonly connector: string | null;
  /** `module.Class` of the tokenizer that loaded. */
  readonly tokenizer: string | null;
  /** "DS" when required and resolved; null when the model does not need it. */
  readonly dsLayout: string | null;
  readonly customCode: { readonly required: boolean; readonly trusted: boolean; readonly reasons: ReadonlyArray<string> } | null;
  /**
   * The engine contract's `connector_version` (vLLM's NIXL_CONNECTOR_VERSION, 9 in 0.29.0) and
   * `transfer_version` (the `nixl` distribution's version), as the runtime carries them; null when the
   * check did not read them. Absent from checks made before the runtime check read them.
   */
  readonly nixl?: { readonly connectorVersion: number; readonly connectorSource: string; readonly version: string; readonly distribution: string } | null;
}

/** A remote step's outcome; exitStatus is null when it did not exit on its own. */
export interface StepResult {
  readonly exitStatus: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** The check lines in `stdout`, in order; anything else (warnings, logs) is skipped. */
export function parseCheckLines(stdout: string): CheckLine[] {
  const out: CheckLine[] = [];
  for (const line of stdout.split("\n")) {
    if (!line.startsWith(CHECK_LINE_PREFIX)) continue;
    try {
      const v = JSON.parse(line.slice(CHECK_LINE_PREFIX.length)) as Record<string, unknown>;
      if (v && typeof v.check === "string" && typeof v.ok === "boolean") out.push(v as CheckLine);
    } catch {
      // A line cut short by a crash is not a result; the check it belonged to is reported missing.
    }
  }
  return out;
}

const tail = (text: string) => text.trim().split("\n").slice(-3).join(" | ") || "no error output";

/** "exited 1", "timed out (exit 124)" or "did not exit (its session ended)". */
export function exitWords(status: number | null): string {
  return status === null ? "did not exit on its own" : status === 124 ? "timed out (exit 124)" : `exited ${status}`;
}

const str = (v: unknown): string | null => (typeof v === "string" ? v : null);

/**
 * Judges the runtime check's output against its request. `runner` names what ran it, e.g.
 * "/usr/bin/python3" or "a container of sha256:…".
 */
export function judgeRuntimeCheck(where: string, request: RuntimeCheckRequest, result: StepResult, runner: string): { findings: RuntimeFindings; failures: CheckFailure[] } {
  const lines = new Map(parseCheckLines(result.stdout).map((l) => [l.check, l]));
  const failures: CheckFailure[] = [];
  const fail = (kind: FailureKind, message: string) => failures.push({ kind, message: `${where}: ${message}` });

  const missing = CHECK_NAMES.filter((n) => !lines.has(n));
  if (missing.length > 0) {
    fail("runtime", `the runtime check (${runner}) ${exitWords(result.exitStatus)} before reporting ${missing.join(", ")}: ${tail(result.stderr)}`);
  }
  const line = (n: CheckName) => lines.get(n);
  const passed = (n: CheckName) => line(n)?.ok === true;

  const custom = line("custom-code");
  if (custom && !custom.ok) {
    if (custom.error) fail("custom-code", `the checkpoint's custom-code metadata could not be read: ${custom.error}`);
    else {
      const reasons = Array.isArray(custom.reasons) ? (custom.reasons as unknown[]).map(String).join("; ") : "auto_map";
      fail("custom-code", `the checkpoint needs --trust-remote-code (${reasons}) but the plan does not set it; rerun discovery so the plan adds it`);
    }
  }

  const packages = line("packages");
  if (packages && !packages.ok) {
    if (packages.error) fail("package", `the pinned package versions could not be read: ${packages.error}`);
    for (const m of Array.isArray(packages.mismatches) ? (packages.mismatches as Array<Record<string, unknown>>) : []) {
      fail("package", `package ${String(m.package)} is pinned to ${String(m.expected)} but the runtime has ${m.found === null ? "no such package installed" : String(m.found)}`);
    }
  }

  const api = line("vllm-api-version");
  if (api && !api.ok) fail("api-version", `vllm.version.__version__ could not be read: ${api.error ?? `it is ${JSON.stringify(api.version)}`}`);

  const connector = line("connector");
  if (connector && !connector.ok) {
    const name = str(request.kvTransferConfig.kv_connector) ?? "(none)";
    fail("connector", `connector ${name} did not resolve through KVConnectorFactory: ${connector.error ?? "no class"}`);
  }

  const ds = line("ds-layout");
  if (ds && !ds.ok) {
    fail(
      "ds-layout",
      ds.error
        ? `the convolutional-state layout could not be checked: ${ds.error}`
        : `the model keeps a convolutional SSM state, which needs VLLM_SSM_CONV_STATE_LAYOUT=DS, but the runtime resolves ${String(ds.layout)}`,
    );
  }

  const tok = line("tokenizer");
  if (tok && !tok.ok) {
    fail("tokenizer", `tokenizer ${request.tokenizer} did not load with trust_remote_code=${request.trustRemoteCode ? "True" : "False"}: ${tok.error ?? "it returned None"}`);
  }

  const nixl = line("nixl-versions");
  if (nixl && !nixl.ok) {
    if (nixl.error) fail("nixl", `the NIXL versions could not be read: ${nixl.error}`);
    if (!nixl.error && typeof nixl.connectorVersion !== "number") {
      fail(
        "nixl",
        `the runtime's vLLM (${String(nixl.searched)}) defines no NIXL_CONNECTOR_VERSION, so the engine contract's connector_version cannot be declared; ` +
          "use a vLLM with the NIXL connector (0.29.0 has it in nixl/metadata.py)",
      );
    }
    if (!nixl.error && typeof nixl.nixlVersion !== "string") {
      fail("nixl", "the runtime has no nixl (or nixl-rocm) distribution: vLLM's NixlConnector needs it, and the engine contract's transfer_version is its version; install NIXL into the runtime");
    }
  }

  if (missing.length === 0 && failures.length === 0 && result.exitStatus !== 0) {
    fail("runtime", `the runtime check (${runner}) ${exitWords(result.exitStatus)} although every check passed: ${tail(result.stderr)}`);
  }

  const observed = (packages?.observed ?? {}) as Record<string, string | null>;
  return {
    findings: {
      vllmApiVersion: passed("vllm-api-version") ? str(api!.version) : null,
      packages: Object.fromEntries(Object.keys(request.pins).sort().map((k) => [k, observed[k] ?? null])),
      connector: passed("connector") ? str(connector!.resolved) : null,
      tokenizer: passed("tokenizer") ? str(tok!.loaded) : null,
      dsLayout: passed("ds-layout") && ds!.required === true ? str(ds!.layout) : null,
      customCode:
        custom && !custom.error
          ? { required: custom.required === true, trusted: custom.trusted === true, reasons: Array.isArray(custom.reasons) ? (custom.reasons as unknown[]).map(String) : [] }
          : null,
      nixl:
        passed("nixl-versions") && typeof nixl!.connectorVersion === "number" && typeof nixl!.nixlVersion === "string"
          ? { connectorVersion: nixl!.connectorVersion, connectorSource: String(nixl!.connectorSource), version: nixl!.nixlVersion, distribution: String(nixl!.nixlDistribution) }
          : null,
    },
    failures,
  };
}

/**
 * The native runtime's identity: the command exists, `--version` reports the pinned vLLM, a Python
 * runs the check, and that Python's vLLM is the launcher's (same version), when the check got that far.
 */
export function judgeNativeIdentity(where: string, identity: NativeIdentity, pinnedVllm: string, apiVersion: string | null): { cliVersion: string | null; failures: CheckFailure[] } {
  const failures: CheckFailure[] = [];
  const fail = (message: string) => failures.push({ kind: "identity", message: `${where}: ${message}` });
  if (identity.scriptKind === "missing" || !identity.path) {
    fail(`runtime.vllmCommand ${JSON.stringify(identity.command)} is not an executable on the login's PATH; install vLLM or set runtime.vllmCommand to its path`);
    return { cliVersion: null, failures };
  }
  let cliVersion: string | null = null;
  if (identity.versionExit !== 0) fail(`${identity.path} --version ${exitWords(identity.versionExit)}: ${tail(identity.versionOutput)}`);
  else {
    cliVersion = parseVllmVersion(identity.versionOutput);
    if (!cliVersion) fail(`${identity.path} --version printed no version: ${JSON.stringify(identity.versionOutput.trim().slice(0, 200))}`);
    else if (cliVersion !== pinnedVllm) {
      fail(`${identity.path} --version reports ${cliVersion} but the plan was derived from vLLM ${pinnedVllm}; rerun discovery after changing the runtime`);
    }
  }
  if (!identity.interpreter) {
    fail(
      identity.interpreterSource === "console-script"
        ? `${identity.path} is a Python console script but no interpreter was found beside it or in its #! line`
        : `${identity.path} is not a Python console script and the login has no python3 to run the runtime check`,
    );
  } else if (apiVersion !== null && cliVersion !== null && apiVersion !== cliVersion) {
    fail(
      `${identity.interpreter} imports vLLM ${apiVersion} but ${identity.path} --version reports ${cliVersion}: the check ran another environment than the engine's; ` +
        "set runtime.vllmCommand to the vllm console script of the environment the engine runs in",
    );
  }
  return { cliVersion, failures };
}

/** The image identity problems (configured ID or digest vs what the daemon resolved), as failures. */
export function imageIdentityFailures(where: string, identity: ImageIdentityCheck): CheckFailure[] {
  return identity.problems.map((p) => ({ kind: "identity" as const, message: `${where}: ${p}` }));
}

/**
 * What a passing check certifies, hashed: the plan, the runtime's identity and its findings. Repeating
 * a check of the same runtime and plan gives the same digest (the check id and times are not in it).
 */
export function checkDigest(planSha256: string, identity: Record<string, unknown>, findings: RuntimeFindings): string {
  return sha256Json({ planSha256, identity, findings });
}
