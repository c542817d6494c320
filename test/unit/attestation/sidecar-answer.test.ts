/** The Attestation provider's reading of its sidecar's answers (lib/attestation/sidecar-answer.ts). */
import { expect } from "chai";
import { clockProblem, detailOf, observedAttestation, processClockOf, PROCESS_CLOCK_TOLERANCE_S } from "../../../lib/attestation/sidecar-answer";

const D = "sha256:" + "a".repeat(64);

describe("attestation: the sidecar's answers", () => {
  it("takes a refusal's detail, or the body when it is not JSON", () => {
    expect(detailOf(JSON.stringify({ detail: "engine gone" }))).to.equal("engine gone");
    expect(detailOf("  plain text  ")).to.equal("plain text");
    expect(detailOf("")).to.equal("(empty body)");
  });

  it("reads /v1/process's clock only from a 200 with a finite start", () => {
    expect(processClockOf(200, JSON.stringify({ process_start_time_seconds: 1700.5 }))).to.equal(1700.5);
    expect(processClockOf(404, JSON.stringify({ process_start_time_seconds: 1700.5 }))).to.equal(null);
    expect(processClockOf(200, "{not json")).to.equal(null);
    expect(processClockOf(200, JSON.stringify({ process_start_time_seconds: "1700" }))).to.equal(null);
  });

  it("holds a pid's clock to the proved start within the tolerance; a container may start before its engine", () => {
    const pid = { hostAlias: "h", pid: 42 };
    expect(clockProblem(pid, 1000, 1000 + PROCESS_CLOCK_TOLERANCE_S)).to.equal(undefined);
    expect(clockProblem(pid, 1000, 900)).to.equal("/v1/process says pid 42 started at 900, the proved engine process at 1000: the sidecar watches another process");
    const container = { hostAlias: "h", containerId: "0123456789abcdef" };
    expect(clockProblem(container, 1000, 10)).to.equal(undefined);
    expect(clockProblem(container, 1000, 2000)).to.equal("/v1/process says container 0123456789ab started at 2000, after the engine process (1000)");
  });

  it("names what a refresh saw against the recorded digest", () => {
    const path = "/v1/attestation";
    expect(observedAttestation(path, 200, JSON.stringify({ attestation_digest: D }), D).observedState).to.equal("attested");
    expect(observedAttestation(path, 200, JSON.stringify({ attestation_digest: "sha256:b" }), D)).to.deep.equal({ observedAttestation: "sha256:b", observedState: "changed", observedDetail: `the sidecar serves sha256:b, recorded ${D}` });
    expect(observedAttestation(path, 503, JSON.stringify({ detail: "engine restarted" }), D)).to.deep.equal({ observedAttestation: "none", observedState: "engine-changed", observedDetail: "/v1/attestation answered 503: engine restarted" });
    expect(observedAttestation(path, 500, "", D).observedDetail).to.equal("/v1/attestation answered HTTP 500");
    expect(observedAttestation(path, 200, "<html>", D).observedDetail).to.equal("/v1/attestation did not answer JSON");
    expect(observedAttestation(path, 200, "{}", D).observedDetail).to.equal("/v1/attestation has no attestation_digest");
  });
});
