/** The error itself: stable code, every problem at once, and the message layout callers print. */
import { expect } from "chai";
import { FleetConfigError } from "../../../lib/config/errors";
import { parseFleetConfig } from "../../../lib/config/parse";
import { issuesOf, variant } from "./fixtures";

describe("config: FleetConfigError", () => {
  it("reports several problems at once, grouped by config key", () => {
    const raw = variant((c) => {
      c.engins = [];
      c.hosts[0].port = 0;
      c.engines[1].host = "c";
      c.engines[0].overrides = { engineEnv: { UCX_TLS: "rc" } };
      c.runtime = { kind: "docker-cli", image: "vllm/vllm-openai:latest" };
      c.slo = { tpotS: 0, firstTokenTimeoutS: 700 };
    });
    // The bad slo.tpotS does not hide the deadline rule on the same section, nor the bad port the
    // engine rules: each field is parsed on its own.
    expect(issuesOf(raw)).to.deep.equal([
      {
        path: "engins",
        message:
          'unknown key; did you mean "engines"? allowed keys: hosts, engines, model, runtime, launch, slo, router, observability, ssh, fabric, profiling, attestation, preflight, calibration, trial, evidence, rollout',
      },
      { path: "hosts[0].port", message: "found 0; allowed: an integer from 1 to 65535" },
      {
        path: "engines[0].overrides.engineEnv.UCX_TLS",
        message: "engine e0 overrides UCX_TLS, which the program sets itself from launch.transport; remove it from engineEnv",
      },
      { path: "engines[1].host", message: '"c" is not the alias of any host; known aliases: a, b' },
      {
        path: "runtime.image",
        message: '"vllm/vllm-openai:latest" is a mutable tag; pin an image ID (sha256:…) or a digest (repo@sha256:…)',
      },
      { path: "slo.tpotS", message: "found 0; allowed: a positive number (seconds)" },
      {
        path: "slo.firstTokenTimeoutS",
        message:
          "found 700, above slo.requestTimeoutS 600; the first-token deadline cannot exceed the request timeout: lower it or raise requestTimeoutS",
      },
    ]);
  });

  it("words its message as a count and one line per problem", () => {
    const err = catchError(() => parseFleetConfig(variant((c) => (c.slo = { ttftS: -1, tpotS: -2 }))));
    expect(err.message).to.equal(
      "invalid fleet config (2 problems):\n" +
        "  - slo.ttftS: found -1; allowed: a positive number (seconds)\n" +
        "  - slo.tpotS: found -2; allowed: a positive number (seconds)",
    );
    const one = catchError(() => parseFleetConfig(variant((c) => (c.slo = { ttftS: -1 }))));
    expect(one.message).to.equal("invalid fleet config (1 problem):\n  - slo.ttftS: found -1; allowed: a positive number (seconds)");
  });

  it("carries the stable code and frozen issues", () => {
    const err = catchError(() => parseFleetConfig(42));
    expect(err).to.be.instanceOf(FleetConfigError);
    expect(err).to.be.instanceOf(Error);
    expect([err.name, err.code]).to.deep.equal(["FleetConfigError", "NARWHAL_CONFIG_INVALID"]);
    expect(err.issues).to.deep.equal([
      { path: "(config)", message: "found 42, which is a number; expected an object of narwhal-fleet config keys" },
    ]);
    expect(Object.isFrozen(err.issues)).to.equal(true);
  });
});

function catchError(fn: () => unknown): FleetConfigError {
  try {
    fn();
  } catch (e) {
    return e as FleetConfigError;
  }
  return expect.fail("expected a FleetConfigError");
}
