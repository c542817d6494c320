/**
 * The Profile's input check, as the provider's check method runs it: each refusal names its property
 * in the provider's words, and what a preview does not know yet is left for the up.
 */
import { expect } from "chai";
import { provider } from "../../../dynamic-providers/profile/provider";
import { UNKNOWN } from "../../../lib/unknown";
import { DEFAULT_SWEEP } from "../../../lib/profiling/sweep";
import { NARWHAL_FIT_LIMITS } from "../../../lib/profiling/fit-limits";

const D = (c: string) => "sha256:" + c.repeat(64);
const via = { alias: "router", host: "198.18.0.10", port: 22, user: "narwhal", hostKey: "ssh-ed25519 AAAA" };
const inputs = (): Record<string, unknown> => ({
  engineId: "e1",
  hostAlias: "sim1",
  url: "http://198.18.0.11:8101",
  servedName: "tiny",
  generationDigest: D("a"),
  processStartTime: 1795956400.25,
  version: "0.29.0",
  attestationDigest: D("b"),
  launchDigest: D("c"),
  planSha256: D("d"),
  sweep: { ...DEFAULT_SWEEP },
  maxNumSeqs: 8,
  via,
  probeTimeoutS: 5,
  requestTimeoutS: 600,
  fitLimits: NARWHAL_FIT_LIMITS,
  fitAttempts: 3,
});

describe("profile provider: the input check", () => {
  const check = (news: Record<string, unknown>) => provider.check!({}, news) as Promise<{ inputs: unknown; failures?: Array<{ property: string; reason: string }> }>;

  it("passes well-formed inputs on as they are", async () => {
    expect(await check(inputs())).to.deep.equal({ inputs: inputs() });
  });

  it("names each bad property, in the order the inputs are listed", async () => {
    const news = { ...inputs(), url: "http://198.18.0.11:8101/v1", attestationDigest: undefined, maxNumSeqs: 0, via: { ...via, hostKey: "" } };
    expect((await check(news)).failures).to.deep.equal([
      { property: "url", reason: 'url must be the engine\'s http://<address>:<port> base URL, got "http://198.18.0.11:8101/v1"' },
      { property: "launchDigest", reason: "launchDigest comes with the attestation it is part of: set attestationDigest too" },
      { property: "maxNumSeqs", reason: "maxNumSeqs must be a positive integer (the plan's --max-num-seqs), got 0" },
      { property: "via", reason: "via.hostKey: the router host router's verified key must be pinned" },
    ]);
  });

  it("leaves what a preview cannot know yet to the up", async () => {
    const news = { ...inputs(), generationDigest: UNKNOWN, processStartTime: UNKNOWN, sweep: { ...DEFAULT_SWEEP, prefillLens: [UNKNOWN] }, via: { ...via, host: UNKNOWN }, fitLimits: UNKNOWN };
    expect(await check(news)).to.deep.equal({ inputs: news });
  });
});
