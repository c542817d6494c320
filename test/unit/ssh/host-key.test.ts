import { expect } from "chai";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { hostKeyMismatchMessage, parseHostKeyLine } from "../../../lib/ssh/host-key";

describe("ssh: host keys", () => {
  it("computes the same SHA-256 fingerprint as ssh-keygen", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hk-"));
    try {
      execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", path.join(dir, "k")]);
      const line = fs.readFileSync(path.join(dir, "k.pub"), "utf8");
      const expected = execFileSync("ssh-keygen", ["-lf", path.join(dir, "k.pub")], { encoding: "utf8" }).split(" ")[1];
      expect(parseHostKeyLine(line).fingerprint).to.equal(expected);
      expect(parseHostKeyLine(line).line).to.equal(line.split(" ").slice(0, 2).join(" "));
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("rejects text that is not a key line", () => {
    expect(() => parseHostKeyLine("ssh-ed25519")).to.throw(/not an SSH public key line/);
    expect(() => parseHostKeyLine("ssh-rsa AAAAC3NzaC1lZDI1NTE5AAAAIO")).to.throw(/not an SSH public key line/);
  });

  it("names the host and both fingerprints when a key changes", () => {
    expect(hostKeyMismatchMessage("sim1", "SHA256:old", "SHA256:new")).to.match(
      /^host sim1: the SSH host key changed \(pinned SHA256:old, presented SHA256:new\); nothing was run on it\./,
    );
  });

  it("gives the exact config command that pins the presented key, at the host's index when known", () => {
    expect(hostKeyMismatchMessage("sim13", "SHA256:old", "SHA256:new", { presentedLine: "ssh-ed25519 AAAAnew", index: 1 })).to.equal(
      "host sim13: the SSH host key changed (pinned SHA256:old, presented SHA256:new); nothing was run on it. " +
        "If the host was legitimately re-keyed, pin its new key: pulumi config set --path 'hosts[1].hostKey' 'ssh-ed25519 AAAAnew', " +
        "then pulumi preview --refresh and pulumi up --refresh.",
    );
    expect(hostKeyMismatchMessage("sim13", "SHA256:old", "SHA256:new", { presentedLine: "ssh-ed25519 AAAAnew" })).to.include("--path 'hosts[<index of sim13>].hostKey'");
  });

  it("pins into the text of a host list stored as JSON text, since a --path set would replace that text", () => {
    const list = [{ alias: "sim1", destination: "root@h1" }, { alias: "sim13", destination: "o'neil@h2", hostKey: "ssh-ed25519 AAAAold" }];
    const message = hostKeyMismatchMessage("sim13", "SHA256:old", "SHA256:new", { presentedLine: "ssh-ed25519 AAAAnew", index: 1, listAsText: list });
    const command = /pin its new key: (pulumi config set hosts .*) \(hosts is stored as JSON text, which a --path set would replace\), then pulumi preview --refresh/.exec(message);
    expect(command, message).to.not.equal(null);
    // The value as the shell hands it to pulumi: the same list, with only sim13's key replaced.
    const argv = execFileSync("sh", ["-c", `printf '%s' ${command![1].slice("pulumi config set hosts ".length)}`], { encoding: "utf8" });
    expect(JSON.parse(argv)).to.deep.equal([list[0], { ...list[1], hostKey: "ssh-ed25519 AAAAnew" }]);
  });
});
