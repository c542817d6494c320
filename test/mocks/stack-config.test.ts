/**
 * readStackConfig, the program's only reader of stack config, with config set the way the SDK receives
 * it (values by full key plus the list of secret keys). Whatever it refuses must end the program as a
 * RunError (printed as its message alone), naming the key and the fix, before any resource exists.
 */
import { expect } from "chai";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { readStackConfig } from "../../entry/stack-config";
import { expectCleanMessage, minimal } from "../unit/config/fixtures";

const P = "narwhal-fleet";

/** Sets the stack config: plain keys from `plain` (objects as JSON), secret ones from `secret`. */
function setConfig(plain: Record<string, unknown>, secret: Record<string, unknown> = {}): void {
  const all: Record<string, string> = {};
  const text = (v: unknown) => (typeof v === "string" ? v : JSON.stringify(v));
  for (const [k, v] of Object.entries({ ...plain, ...secret })) all[`${P}:${k}`] = text(v);
  pulumi.runtime.setAllConfig(all, Object.keys(secret).map((k) => `${P}:${k}`));
}

function refusal(): Error {
  try {
    readStackConfig();
  } catch (err) {
    return err as Error;
  }
  return expect.fail("expected the config to be refused");
}

describe("mocks: stack config refusals end the program with one clean message", () => {
  let dir: string;
  before(async () => {
    await pulumi.runtime.setMocks({ newResource: (a) => ({ id: a.name, state: a.inputs }), call: (a) => a.inputs }, P, "dev");
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "stack-config-"));
  });
  after(() => {
    pulumi.runtime.setAllConfig({}, []);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("reads a valid config with its secrets", () => {
    setConfig({ ...minimal(), ssh: { configFile: "/dev/null" } }, { engineApiKey: "sk-1", sshPasswords: { a: "p" } });
    const { spec, sshConfig } = readStackConfig();
    expect(spec.hosts.map((h) => h.alias)).to.deep.equal(["a", "b"]);
    expect(sshConfig?.root).to.deep.equal({ path: "/dev/null", lines: [] });
  });

  it("refuses a password set without --secret as a RunError naming the path and the command", () => {
    setConfig({ ...minimal(), sshPasswords: { a: "hunter2" } }, { engineApiKey: "sk-1" });
    const err = refusal();
    expect(pulumi.RunError.isInstance(err)).to.equal(true);
    // Nothing of ours rides on the error for the SDK to dump; it prints a RunError's message alone.
    expect(Object.keys(err)).to.deep.equal(["__pulumiRunError"]);
    const issue = {
      path: "sshPasswords.a",
      message: "set in clear text, so it is stored unencrypted in the stack file; store it as a secret: `pulumi config set --secret --path 'sshPasswords.a' <value>`",
    };
    expect(err.message).to.equal(`invalid fleet config (1 problem):\n  - ${issue.path}: ${issue.message}`);
    expectCleanMessage(err.message, [issue]);
  });

  it("lists a clear-text secret, a schema problem and a missing key file in one message", () => {
    const keyFile = path.join(dir, "absent-key");
    setConfig({ ...minimal(), engineApiKey: "sk-1", slo: { ttftS: -1 }, sshPrivateKeyFile: keyFile });
    const err = refusal();
    expect(pulumi.RunError.isInstance(err)).to.equal(true);
    const lines = err.message.split("\n");
    expect(lines[0]).to.equal("invalid fleet config (3 problems):");
    expect(lines.slice(1).map((l) => l.split(": ")[0])).to.deep.equal(["  - engineApiKey", "  - slo.ttftS", "  - sshPrivateKeyFile"]);
    expect(lines[3]).to.include(`${keyFile}: no such file; point it at the SSH private key`);
    expect(err.message).not.to.match(/^\s+at /m);
  });

  it("refuses an ssh.configFile it cannot read, naming the key", () => {
    setConfig({ ...minimal(), ssh: { configFile: dir } }, { engineApiKey: "sk-1" });
    const err = refusal();
    expect(pulumi.RunError.isInstance(err)).to.equal(true);
    expect(err.message).to.equal(
      `invalid fleet config (1 problem):\n  - ssh.configFile: ${dir}: it is a folder, not a file; make it readable by this user, or name another OpenSSH client config file, or remove the key`,
    );
  });

  it("refuses a missing engineApiKey", () => {
    setConfig(minimal());
    expect(refusal().message).to.equal(
      "invalid fleet config (1 problem):\n  - engineApiKey: missing; engines require an API key: set one with `pulumi config set --secret engineApiKey <key>`",
    );
  });
});
