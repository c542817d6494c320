/**
 * The entry's known_hosts writer, which the docker backend calls inside the apply that yields its
 * provider's sshOpts: the file ssh reads is the operator's alone and is never seen half written.
 */
import { expect } from "chai";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { writeKnownHosts } from "../../../entry/known-hosts";

const LINE_A = "198.18.0.11 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcH\n";
const LINE_B = "[198.18.0.12]:2222 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJ\n";

describe("entry: the docker backend's known_hosts", () => {
  let root: string;
  beforeEach(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), "narwhal-known-hosts-"));
  });
  afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

  it("creates its folder 0700 and the file 0600, holding exactly the text", () => {
    const file = path.join(root, "runs", "dev", "ssh", "fleet-a-docker.known_hosts");
    writeKnownHosts(file, LINE_A);
    expect(fs.readFileSync(file, "utf8")).to.equal(LINE_A);
    expect(fs.statSync(file).mode & 0o777).to.equal(0o600);
    expect(fs.statSync(path.dirname(file)).mode & 0o777).to.equal(0o700);
  });

  it("replaces a changed file in one rename, leaving no temporary file, and leaves an unchanged one as it is", () => {
    const file = path.join(root, "fleet-a-docker.known_hosts");
    writeKnownHosts(file, LINE_A);
    const first = fs.statSync(file).ino;
    writeKnownHosts(file, LINE_A);
    expect(fs.statSync(file).ino, "same text: the very file").to.equal(first);
    writeKnownHosts(file, LINE_A + LINE_B);
    expect(fs.readFileSync(file, "utf8")).to.equal(LINE_A + LINE_B);
    expect(fs.statSync(file).ino, "new text: a new file renamed over the old").to.not.equal(first);
    expect(fs.readdirSync(root)).to.deep.equal(["fleet-a-docker.known_hosts"]);
  });
});
