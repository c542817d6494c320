/**
 * Files the config names on this machine: a private key file or an ssh_config that cannot be read is a
 * config problem at the key the user wrote, with the fix, never a raw ENOENT. Exact messages.
 */
import { expect } from "chai";
import { FleetConfigError } from "../../../lib/config/errors";
import { identityFileMessage, keyFileIssue, MISSING_API_KEY, sshConfigIssue } from "../../../lib/config/local-files";
import { expectCleanMessage } from "./fixtures";

const KEY_FIX =
  "point it at the SSH private key the hosts accept (`pulumi config set sshPrivateKeyFile /full/path/to/key`), or store the key itself as a secret " +
  "(`pulumi config set --secret sshPrivateKey < /full/path/to/key`) and remove sshPrivateKeyFile";

const CASES: Array<{ name: string; issue: () => { path: string; message: string }; expected: [string, string] }> = [
  {
    name: "a missing sshPrivateKeyFile",
    issue: () => keyFileIssue("/keys/fleet", "/keys/fleet", "ENOENT"),
    expected: ["sshPrivateKeyFile", `/keys/fleet: no such file; ${KEY_FIX}`],
  },
  {
    name: "an unreadable sshPrivateKeyFile",
    issue: () => keyFileIssue("/keys/fleet", "/keys/fleet", "EACCES"),
    expected: ["sshPrivateKeyFile", `/keys/fleet: permission denied; ${KEY_FIX}`],
  },
  {
    name: "a relative sshPrivateKeyFile with ~, read from the project folder",
    issue: () => keyFileIssue("~/.ssh/id", "/proj/~/.ssh/id", "ENOENT"),
    expected: ["sshPrivateKeyFile", `~/.ssh/id (read as /proj/~/.ssh/id): no such file; "~" is not expanded here, write the full path; ${KEY_FIX}`],
  },
  {
    name: "an sshPrivateKeyFile that is a folder",
    issue: () => keyFileIssue("/keys", "/keys", "EISDIR"),
    expected: ["sshPrivateKeyFile", `/keys: it is a folder, not a file; ${KEY_FIX}`],
  },
  {
    name: "a missing ssh.configFile",
    issue: () => sshConfigIssue("conf/ssh", "/proj/conf/ssh", "ENOENT"),
    expected: ["ssh.configFile", "conf/ssh (read as /proj/conf/ssh): no such file; name an OpenSSH client config file that exists, or remove the key"],
  },
  {
    name: "an unreadable ssh.configFile",
    issue: () => sshConfigIssue("/etc/fleet/ssh_config", "/etc/fleet/ssh_config", "EACCES"),
    expected: [
      "ssh.configFile",
      "/etc/fleet/ssh_config: permission denied; make it readable by this user, or name another OpenSSH client config file, or remove the key",
    ],
  },
  {
    name: "an unreadable default ~/.ssh/config",
    issue: () => sshConfigIssue(undefined, "/home/ops/.ssh/config", "EACCES"),
    expected: ["ssh.configFile", "the default /home/ops/.ssh/config: permission denied; make it readable by this user, or point ssh.configFile at another OpenSSH client config"],
  },
  {
    name: "a missing engineApiKey",
    issue: () => MISSING_API_KEY,
    expected: ["engineApiKey", "missing; engines require an API key: set one with `pulumi config set --secret engineApiKey <key>`"],
  },
];

describe("config: files and keys read beside the schema", () => {
  for (const { name, issue, expected } of CASES) {
    it(`rejects ${name}`, () => {
      const [path, message] = expected;
      expect(issue()).to.deep.equal({ path, message });
      expectCleanMessage(new FleetConfigError([issue()]).message, [{ path, message }]);
    });
  }

  it("names the host, the IdentityFile and both fixes when an ssh_config key cannot be read", () => {
    expect(identityFileMessage("gpu1", "/home/ops/.ssh/gpu1", "EACCES")).to.equal(
      "host gpu1: the IdentityFile its ssh_config entry names, /home/ops/.ssh/gpu1: permission denied; make it readable by this user, " +
        "or give the host's key as a secret (`pulumi config set --secret --path 'sshPrivateKeys.gpu1' < /home/ops/.ssh/gpu1`)",
    );
  });
});
