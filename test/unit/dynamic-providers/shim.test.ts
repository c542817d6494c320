/**
 * The shim every dynamic resource serialises as `__provider`, run by the SDK's own provider host process
 * (node_modules/@pulumi/pulumi/cmd/dynamic-provider) over gRPC as the engine runs it: a refusal during a
 * refresh (read), diff, check or delete reaches the engine as its one worded line, and the host prints no
 * `Error: X: Error: X` with JavaScript frames to its stderr, which the CLI shows under the Stack. A
 * programming error keeps its stack there. A changed shim text is never a change of the resource.
 */
import { expect } from "chai";
import { spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { providerShim } from "../../../dynamic-providers/shim";
import { REFUSAL } from "../../fixtures/providers/refusing";

const ROOT = path.resolve(__dirname, "../../..");
/** The shims stacks written by earlier versions hold in their state, for the same fixture provider: before shim-host.ts, and one per resource type. */
const SHIM_IN_STATE_V1 = fs.readFileSync(path.join(ROOT, "test/fixtures/providers/shim-in-state-v1.txt"), "utf8");
const SHIM_IN_STATE_V2 = fs.readFileSync(path.join(ROOT, "test/fixtures/providers/shim-in-state-v2.txt"), "utf8");
/** The shim of the version before the package: its code copied into each resource, one object for every type. */
const SHIM_IN_STATE_V3 = fs.readFileSync(path.join(ROOT, "test/fixtures/providers/shim-in-state-v3.txt"), "utf8");
const FIXTURE = "test/fixtures/providers/refusing.ts";
const SDK = path.dirname(require.resolve("@pulumi/pulumi/package.json"));
const grpc = require(require.resolve("@grpc/grpc-js", { paths: [SDK] })) as typeof import("@grpc/grpc-js");
const rpc = require(path.join(SDK, "proto", "provider_grpc_pb.js"));
const pb = require(path.join(SDK, "proto", "provider_pb.js"));
const structpb = require(require.resolve("google-protobuf/google/protobuf/struct_pb", { paths: [SDK] }));

type Call = (req: unknown, cb: (err: { details?: string } | null, res: unknown) => void) => void;

describe("dynamic provider shim, in the SDK's provider host", function () {
  this.timeout(60_000);
  let host: ChildProcess;
  let stderr = "";
  let client: Record<string, Call>;
  let shimText: string;

  before(async () => {
    const { serializeFunction } = require("@pulumi/pulumi").runtime;
    shimText = (await serializeFunction(() => providerShim)).text;
    // The engine starts the host in the program directory with its own address; this test is the engine.
    host = spawn(process.execPath, [path.join(SDK, "cmd", "dynamic-provider", "index.js"), "127.0.0.1:1"], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
    host.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
    const port = await new Promise<string>((resolve, reject) => {
      host.stdout!.once("data", (d: Buffer) => resolve(d.toString().trim()));
      host.once("exit", (code) => reject(new Error(`provider host exited (${code}): ${stderr}`)));
    });
    client = new rpc.ResourceProviderClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  });
  after(() => host?.kill());

  const props = (extra: Record<string, unknown>) => structpb.Struct.fromJavaScript({ __provider: shimText, __implementation: FIXTURE, ...extra });
  const ask = (method: string, req: unknown) =>
    new Promise<{ error?: string; response?: unknown }>((resolve) => client[method].call(client, req, (err, res) => resolve(err ? { error: err.details } : { response: res })));
  /** What the host printed to stderr during `run`, once it has had time to print. */
  const printedDuring = async <T>(run: () => Promise<T>): Promise<{ result: T; printed: string }> => {
    const from = stderr.length;
    const result = await run();
    await new Promise((r) => setTimeout(r, 200));
    return { result, printed: stderr.slice(from) };
  };

  const requests: Record<string, (extra: Record<string, unknown>) => unknown> = {
    read: (extra) => new pb.ReadRequest().setId("r1").setUrn("urn:pulumi:s::p::t::r1").setProperties(props(extra)),
    diff: (extra) => new pb.DiffRequest().setId("r1").setUrn("urn:pulumi:s::p::t::r1").setOlds(props(extra)).setNews(props(extra)),
    check: (extra) => new pb.CheckRequest().setUrn("urn:pulumi:s::p::t::r1").setOlds(props(extra)).setNews(props(extra)),
    delete: (extra) => new pb.DeleteRequest().setId("r1").setUrn("urn:pulumi:s::p::t::r1").setProperties(props(extra)),
  };

  for (const method of Object.keys(requests)) {
    it(`${method}: an SSH refusal reaches the engine as its one line, and nothing is printed under the Stack`, async () => {
      const { result, printed } = await printedDuring(() => ask(method, requests[method]({ mode: "refuse" })));
      expect(result.error).to.equal(REFUSAL);
      expect(printed, "the host's stderr").to.equal("");
    });
  }

  it("a programming error (TypeError) keeps its stack under the Stack, to be fixed", async () => {
    const { result, printed } = await printedDuring(() => ask("read", requests.read({ mode: "bug" })));
    expect(result.error).to.include("Cannot read properties of undefined");
    expect(printed).to.match(/TypeError: Cannot read properties of undefined.*\n\s+at /);
  });

  it("an SSH refusal after a quieted one is quieted too, and other prints pass", async () => {
    for (let i = 0; i < 2; i++) {
      const { printed } = await printedDuring(() => ask("read", requests.read({ mode: "refuse" })));
      expect(printed).to.equal("");
    }
  });

  it("is a reference to the installed package, not a copy of its code", () => {
    expect(shimText).to.include('require("narwhal-fleet-provider-shim');
    expect(shimText).to.not.include("dispatch");
    expect(shimText.length, "characters of __provider").to.be.below(SHIM_IN_STATE_V3.length / 5);
  });

  it("the shim of the version before the package, still in a stack's state, keeps working: a refusal is its one line, nothing printed", async () => {
    const req = new pb.ReadRequest().setId("r1").setUrn("urn:pulumi:s::p::t::r1").setProperties(structpb.Struct.fromJavaScript({ __provider: SHIM_IN_STATE_V3, __implementation: FIXTURE, mode: "refuse" }));
    const { result, printed } = await printedDuring(() => ask("read", req));
    expect(result.error).to.equal(REFUSAL);
    expect(printed, "the host's stderr").to.equal("");
  });

  for (const [version, text] of [["v1", SHIM_IN_STATE_V1], ["v2", SHIM_IN_STATE_V2]] as const) {
    it(`an older shim still in a stack's state (${version}, naming its own implementation) keeps working: a refusal is its one line, nothing printed`, async () => {
      const req = new pb.ReadRequest().setId("r1").setUrn("urn:pulumi:s::p::t::r1").setProperties(structpb.Struct.fromJavaScript({ __provider: text, mode: "refuse" }));
      const { result, printed } = await printedDuring(() => ask("read", req));
      expect(result.error).to.equal(REFUSAL);
      expect(printed, "the host's stderr").to.equal("");
    });
  }

  it("one shim for every resource type: each resource names its implementation, and results keep that name for the next call", async () => {
    const { response } = await ask("check", requests.check({ mode: "echo" }));
    const inputs = (response as { getInputs(): { toJavaScript(): Record<string, unknown> } }).getInputs().toJavaScript();
    expect(inputs).to.include({ __implementation: FIXTURE, mode: "echo" });
    const read = await ask("read", requests.read({ mode: "echo" }));
    expect((read.response as { getProperties(): { toJavaScript(): Record<string, unknown> } }).getProperties().toJavaScript()).to.include({ __implementation: FIXTURE });
    const unnamed = new pb.ReadRequest().setId("r1").setUrn("urn:pulumi:s::p::t::r1").setProperties(structpb.Struct.fromJavaScript({ __provider: shimText, mode: "echo" }));
    expect((await ask("read", unnamed)).error).to.match(/names no __implementation for read/);
  });

  it("diff: the shim's own props (`__provider`, `__implementation`) changed are no change, even to a provider comparing every input", async () => {
    const req = new pb.DiffRequest()
      .setId("r1")
      .setUrn("urn:pulumi:s::p::t::r1")
      .setOlds(structpb.Struct.fromJavaScript({ __provider: SHIM_IN_STATE_V2, mode: "compare" }))
      .setNews(props({ mode: "compare" }));
    const { error, response } = await ask("diff", req);
    expect(error).to.equal(undefined);
    expect((response as { getChanges(): number }).getChanges()).to.equal(pb.DiffResponse.DiffChanges.DIFF_NONE);
  });
});
