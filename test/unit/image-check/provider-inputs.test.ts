/**
 * The image check provider's input check, as its check method runs it: each refusal names its property,
 * the spec's own rules run once every value they read is known, and a preview's unknowns wait for the up.
 */
import { expect } from "chai";
import { provider } from "../../../dynamic-providers/image-check/provider";
import { UNKNOWN } from "../../../lib/unknown";
import { renderLaunchPlan } from "../../../lib/launch/plan";
import { launchInputs } from "../launch/inputs";
import { RUNTIME_CHECK_SHA256 } from "../../../lib/image-check/commands";

// The host in the launch fixture is "a"; only the plan's own facts (model folder, hash) are compared here.
const plan = renderLaunchPlan(launchInputs());
const login = { host: "198.18.0.11", port: 22, user: "narwhal", hostKey: "ssh-ed25519 AAAA", connectTimeoutS: 20 };
const inputs = (): Record<string, unknown> => ({
  engineId: "e1",
  hostAlias: "h1",
  stack: "dev",
  login,
  plan,
  planSha256: plan.planSha256,
  runtime: { kind: "native", vllmCommand: "vllm" },
  modelDir: "/models/tiny",
  pins: { vllm: "0.29.0" },
  dsRequired: false,
  checkScriptSha256: RUNTIME_CHECK_SHA256,
  deadlines: { inspectS: 30, checkS: 300 },
});

describe("image check provider: the input check", () => {
  const check = (news: Record<string, unknown>) => provider.check!({}, news) as Promise<{ inputs: unknown; failures?: Array<{ property: string; reason: string }> }>;

  it("passes well-formed inputs on as they are", async () => {
    expect(await check(inputs())).to.deep.equal({ inputs: inputs() });
  });

  it("names each bad property: the evidence folder, each login field, the plan hash, then the spec's own rules", async () => {
    const news = { ...inputs(), stack: "a/b", login: { ...login, hostKey: "", port: "22" }, planSha256: `sha256:${"0".repeat(64)}`, modelDir: "models/tiny" };
    expect((await check(news)).failures).to.deep.equal([
      { property: "stack", reason: 'stack "a/b" cannot name an evidence folder' },
      { property: "login", reason: "login.hostKey must be the host key discovery verified" },
      { property: "login", reason: "login.port must be a port number" },
      { property: "planSha256", reason: `planSha256 "sha256:${"0".repeat(64)}" is not the plan's own hash "${plan.planSha256}"` },
      { property: "modelDir", reason: 'modelDir "models/tiny" is not the plan\'s model "/models/tiny"' },
      { property: "modelDir", reason: 'modelDir "models/tiny" must be an absolute host path' },
    ]);
  });

  it("refuses a check script digest other than the check this provider runs", async () => {
    const other = `sha256:${"ab".repeat(32)}`;
    expect((await check({ ...inputs(), checkScriptSha256: other })).failures).to.deep.equal([
      { property: "checkScriptSha256", reason: `checkScriptSha256 "${other}" is not the runtime check this provider runs (${RUNTIME_CHECK_SHA256})` },
    ]);
  });

  it("replaces the check when the runtime check's code changes, as it would for a new plan", async () => {
    const olds = { ...inputs(), checkScriptSha256: undefined };
    expect(await provider.diff!("id", olds, inputs())).to.deep.equal({ changes: true, replaces: ["checkScriptSha256"], deleteBeforeReplace: false });
    expect(await provider.diff!("id", inputs(), inputs())).to.deep.include({ changes: false });
  });

  it("leaves what a preview cannot know yet to the up", async () => {
    // The spec's rules wait for every value they read: a bad pin is judged once the deadlines are known.
    const news = { ...inputs(), login: { ...login, hostKey: UNKNOWN }, planSha256: UNKNOWN, deadlines: { inspectS: UNKNOWN, checkS: 300 }, pins: { torch: "2.9 .0" } };
    expect(await check(news)).to.deep.equal({ inputs: news });
  });
});
