/** One reading of an attestation sidecar over a route (lib/attestation/sidecar-read.ts): what stops it, worded for the operator. */
import { expect } from "chai";
import type { AttestationError } from "../../../lib/attestation/errors";
import { readSidecar, type SidecarToRead } from "../../../lib/attestation/sidecar-read";
import type { Ask } from "../../../lib/engine/generation";

const engine = { engineId: "e0", hostAlias: "sim1", url: "http://10.0.0.1:8101/v1/attestation", probeTimeoutS: 1 } as SidecarToRead;
const who = "engine e0 on host sim1: attestation sidecar at http://10.0.0.1:8101/v1/attestation";

async function refusal(answers: Record<string, { status: number; body: string }>): Promise<AttestationError> {
  const asked: string[] = [];
  const ask: Ask = async (path) => {
    asked.push(path);
    return answers[path] ?? { status: 404, body: "" };
  };
  try {
    await readSidecar(ask, engine);
  } catch (err) {
    return Object.assign(err as AttestationError, { asked });
  }
  throw new Error("expected a refusal");
}

describe("attestation: reading a sidecar", () => {
  it("stops at once when /health answers 503: the engine the sidecar bound is gone", async () => {
    const e = await refusal({ "/health": { status: 503, body: '{"detail":"engine pid 41 is gone"}' } });
    expect(e.code).to.equal("NARWHAL_ATTESTATION_ENGINE_CHANGED");
    expect(e.message).to.match(new RegExp(`^${who.replace(/[.]/g, "\\.")}: /health answered 503 \\(`));
    expect((e as unknown as { asked: string[] }).asked).to.deep.equal(["/health"]);
  });

  it("waits for /health within probeTimeoutS, then names the last answer", async () => {
    const e = await refusal({ "/health": { status: 500, body: "" } });
    expect(e.code).to.equal("NARWHAL_ATTESTATION_SIDECAR");
    expect(e.message).to.contain(`${who}: /health did not answer 200 within 1 s (last: HTTP 500); nothing was recorded.`);
    expect((e as unknown as { asked: string[] }).asked.length).to.be.above(1);
  });

  it("refuses an attestation answered with another status than 200, before checking anything", async () => {
    const e = await refusal({ "/health": { status: 200, body: "" }, "/v1/attestation": { status: 404, body: "" } });
    expect(e.code).to.equal("NARWHAL_ATTESTATION_SIDECAR");
    expect(e.message).to.match(new RegExp(`^${who.replace(/[.]/g, "\\.")}: /v1/attestation answered HTTP 404: `));
  });
});
