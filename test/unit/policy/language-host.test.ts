/**
 * tools/policy-language-host over real gRPC on loopback, as the CLI drives it: it prints its port, answers
 * GetPluginInfo, and RunPlugin runs the pack's policy runner in the pack's folder, streaming its output
 * (the pack's own port, which the CLI reads) until the call is cancelled; a pack without its packages
 * fails with the message the CLI maps to "run npm install".
 */
import { spawn, ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { expect } from "chai";
import * as grpc from "@grpc/grpc-js";

const ROOT = path.resolve(__dirname, "..", "..", "..");
const HOST = path.join(ROOT, "tools", "policy-language-host", "pulumi-language-nodejs-policy");
// The generated gRPC modules have no TypeScript imports of their own.
const services = require("@pulumi/pulumi/proto/language_grpc_pb.js");
const messages = require("@pulumi/pulumi/proto/language_pb.js");
const empty = require("google-protobuf/google/protobuf/empty_pb.js");

interface RunOutcome {
  stdout: string;
  stderr: string;
  exitcode?: number;
}

describe("tools/policy-language-host", function () {
  this.timeout(60_000);
  let host: ChildProcess;
  let client: grpc.Client & Record<string, (...args: unknown[]) => unknown>;

  before(async () => {
    host = spawn(HOST, ["127.0.0.1:1"], { cwd: ROOT, stdio: ["ignore", "pipe", "inherit"] });
    const port = await new Promise<string>((resolve, reject) => {
      host.stdout!.once("data", (d: Buffer) => resolve(d.toString().trim()));
      host.once("exit", (code) => reject(new Error(`language host exited with ${code}`)));
    });
    expect(port).to.match(/^\d+$/);
    client = new services.LanguageRuntimeClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  });

  after(() => {
    client?.close();
    host?.kill("SIGTERM");
  });

  /** RunPlugin on a pack folder; cancels the call once `until` holds for what was streamed so far. */
  function runPlugin(packDir: string, until: (o: RunOutcome) => boolean): Promise<RunOutcome> {
    const info = new messages.ProgramInfo();
    info.setRootDirectory(packDir);
    info.setProgramDirectory(packDir);
    info.setEntryPoint(".");
    const req = new messages.RunPluginRequest();
    req.setPwd(ROOT);
    req.setInfo(info);
    req.setArgsList(["127.0.0.1:1"]);
    req.setEnvList(Object.entries(process.env).map(([k, v]) => `${k}=${v}`));
    req.setKind("analyzer");
    const out: RunOutcome = { stdout: "", stderr: "" };
    return new Promise((resolve, reject) => {
      const call = client["runPlugin"](req) as grpc.ClientReadableStream<{ getStdout_asU8(): Uint8Array; getStderr_asU8(): Uint8Array; hasExitcode?(): boolean; getOutputCase(): number; getExitcode(): number }>;
      call.on("data", (m) => {
        const which = m.getOutputCase();
        if (which === messages.RunPluginResponse.OutputCase.STDOUT) out.stdout += Buffer.from(m.getStdout_asU8()).toString();
        if (which === messages.RunPluginResponse.OutputCase.STDERR) out.stderr += Buffer.from(m.getStderr_asU8()).toString();
        if (which === messages.RunPluginResponse.OutputCase.EXITCODE) out.exitcode = m.getExitcode();
        if (until(out)) call.cancel();
      });
      call.on("end", () => resolve(out));
      call.on("error", (e: grpc.ServiceError) => (e.code === grpc.status.CANCELLED ? resolve(out) : reject(e)));
    });
  }

  it("answers GetPluginInfo with its version", async () => {
    const info = await new Promise<{ getVersion(): string }>((resolve, reject) =>
      client["getPluginInfo"](new empty.Empty(), (err: Error | null, res: { getVersion(): string }) => (err ? reject(err) : resolve(res))),
    );
    expect(info.getVersion()).to.equal("0.1.0");
  });

  it("runs the pack in its folder and streams the port the pack listens on", async () => {
    const out = await runPlugin(path.join(ROOT, "policy"), (o) => /^\d+\n/.test(o.stdout));
    expect(out.stdout, out.stderr).to.match(/^\d+\n/);
  });

  it("fails a pack whose packages are not installed, naming the runner it could not find", async () => {
    const bare = fs.mkdtempSync(path.join(os.tmpdir(), "narwhal-pack-"));
    try {
      const out = await runPlugin(bare, () => false);
      expect(out.exitcode).to.equal(1);
      expect(out.stderr).to.equal(`Cannot find module '@pulumi/pulumi/cmd/run-policy-pack' from ${bare}: run npm ci there (scripts/setup.sh does)\n`);
    } finally {
      fs.rmSync(bare, { recursive: true, force: true });
    }
  });
});
