/**
 * The entry's reads of local files, for the components: an ssh_config alias's IdentityFile becomes the
 * host's key (a secret) only when config gives the host none, and a file that exists but cannot be read
 * ends the run with the message that names it.
 */
import { expect } from "chai";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { parseFleetConfig } from "../../../lib/config/parse";
import { identityFileMessage } from "../../../lib/config/local-files";
import { loadSshConfig } from "../../../lib/ssh/ssh-config/load";
import type { SshConfig } from "../../../lib/ssh/ssh-config/resolve";
import type { FleetSecrets } from "../../../components/fleet-inputs";
import { readLocalFiles } from "../../../entry/local-files";

const RAW = {
  hosts: [
    { alias: "a", destination: "gpu-a", fabricInterface: "fab0" },
    { alias: "b", destination: "gpu-b", fabricInterface: "fab0" },
  ],
  engines: [
    { id: "e1", host: "a", gpuIds: [0] },
    { id: "e2", host: "b", gpuIds: [0] },
  ],
  model: { servedName: "tiny", checkpointDir: "/models/tiny" },
};
const spec = parseFleetConfig(RAW);

/** Secrets where only the hosts in `keyed` have a key in config. */
function secrets(keyed: string[]): FleetSecrets {
  return {
    engineApiKey: pulumi.secret("api"),
    sshPrivateKey: (alias) => (keyed.includes(alias) ? pulumi.secret(`config key of ${alias}`) : undefined),
    sshPassword: () => undefined,
  };
}

function valueOf<T>(o: pulumi.Output<T>): Promise<T> {
  return (o as unknown as { promise(): Promise<T> }).promise();
}

describe("entry: local files read for the components", () => {
  let dir: string;
  let sshConfig: SshConfig;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "local-files-"));
    const text = ["Host gpu-a", "  HostName 198.18.0.11", `  IdentityFile ${dir}/id_a`, "Host gpu-b", "  HostName 198.18.0.12", `  IdentityFile ${dir}/id_b`, ""].join("\n");
    const top = path.join(dir, "config");
    sshConfig = { root: loadSshConfig(top, text, { home: dir, files: { readFile: () => "", listDir: () => [] } }), home: dir, localUser: "op" };
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it("reads the IdentityFile of each host config gives no key, as a secret; an absent file is no key", async () => {
    fs.writeFileSync(path.join(dir, "id_a"), "PRIVATE KEY A\n");
    const read = readLocalFiles(spec, secrets([]), sshConfig);
    expect([...read.identityKeys.keys()]).to.deep.equal(["a"]);
    expect(await valueOf(read.identityKeys.get("a")!)).to.equal("PRIVATE KEY A\n");
    expect(await pulumi.isSecret(read.identityKeys.get("a")!)).to.equal(true);
    expect(read.profileAdopt).to.equal(undefined);
    expect(read.calibrationAdopt).to.equal(undefined);
  });

  it("leaves the IdentityFile of a host config gives a key unread", () => {
    // A folder where the file should be: reading it would fail, so a read would show.
    fs.mkdirSync(path.join(dir, "id_a"));
    expect([...readLocalFiles(spec, secrets(["a"]), sshConfig).identityKeys.keys()]).to.deep.equal([]);
  });

  it("ends the run naming the host and the file when an IdentityFile exists but cannot be read", () => {
    fs.mkdirSync(path.join(dir, "id_b"));
    const read = () => readLocalFiles(spec, secrets(["a"]), sshConfig);
    expect(read).to.throw(pulumi.RunError, identityFileMessage("b", path.join(dir, "id_b"), "EISDIR"));
  });

  it("ends the run naming calibration.adopt.path when the calibration file cannot be read", () => {
    const absent = path.join(dir, "absent.json");
    const adopting = parseFleetConfig({ ...RAW, calibration: { enabled: true, adopt: { path: absent } } });
    expect(() => readLocalFiles(adopting, secrets(["a", "b"]), undefined)).to.throw(pulumi.RunError, `config narwhal-fleet:calibration.adopt.path: cannot read the calibration ${absent} (ENOENT)`);
  });
});
