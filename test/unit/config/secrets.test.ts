/**
 * Secret keys given in clear text. The input is what the SDK hands the program: every config value by
 * full key, and the full keys it marks secret (PULUMI_CONFIG_SECRET_KEYS). Each case asserts the path,
 * the exact message with its fix command, and the printed shape.
 */
import { expect } from "chai";
import { FleetConfigError } from "../../../lib/config/errors";
import { cleartextSecretIssues, parseSecretKeyList, secretSetCommand } from "../../../lib/config/secrets";
import { expectCleanMessage } from "./fixtures";

const P = "narwhal-fleet";
const CLEAR = "set in clear text, so it is stored unencrypted in the stack file; store it as a secret: ";

interface SecretCase {
  name: string;
  config: Record<string, string>;
  secret: string[];
  issues: Array<[path: string, message: string]>;
}

const CASES: SecretCase[] = [
  {
    name: "engineApiKey set without --secret",
    config: { [`${P}:engineApiKey`]: "sk-123" },
    secret: [],
    issues: [["engineApiKey", CLEAR + "`pulumi config set --secret engineApiKey <value>`"]],
  },
  {
    name: "sshPrivateKey set without --secret",
    config: { [`${P}:sshPrivateKey`]: "-----BEGIN OPENSSH PRIVATE KEY-----" },
    secret: [],
    issues: [["sshPrivateKey", CLEAR + "`pulumi config set --secret sshPrivateKey <value>`"]],
  },
  {
    name: "grafanaAdminPassword set without --secret",
    config: { [`${P}:grafanaAdminPassword`]: "admin" },
    secret: [`${P}:engineApiKey`],
    issues: [["grafanaAdminPassword", CLEAR + "`pulumi config set --secret grafanaAdminPassword <value>`"]],
  },
  {
    name: "a host password set with --path but without --secret",
    config: { [`${P}:sshPasswords`]: '{"sim1":"hunter2"}' },
    secret: [],
    issues: [["sshPasswords.sim1", CLEAR + "`pulumi config set --secret --path 'sshPasswords.sim1' <value>`"]],
  },
  {
    name: "two host keys in clear text, one line each",
    config: { [`${P}:sshPrivateKeys`]: '{"sim1":"k1","gpu-b":"k2"}' },
    secret: [],
    issues: [
      ["sshPrivateKeys.sim1", CLEAR + "`pulumi config set --secret --path 'sshPrivateKeys.sim1' <value>`"],
      ['sshPrivateKeys["gpu-b"]', CLEAR + "`pulumi config set --secret --path 'sshPrivateKeys[\"gpu-b\"]' <value>`"],
    ],
  },
  {
    name: "sshPasswords given as one plain string instead of one per host",
    config: { [`${P}:sshPasswords`]: "hunter2" },
    secret: [],
    issues: [
      ["sshPasswords", "set in clear text; it holds one secret per host alias: set each with `pulumi config set --secret --path 'sshPasswords.<alias>' <value>`"],
    ],
  },
  {
    name: "every secret in clear text at once, in a stable order",
    config: { [`${P}:grafanaAdminPassword`]: "g", [`${P}:engineApiKey`]: "k", [`${P}:sshPasswords`]: '{"a":"p"}' },
    secret: [],
    issues: [
      ["engineApiKey", CLEAR + "`pulumi config set --secret engineApiKey <value>`"],
      ["sshPasswords.a", CLEAR + "`pulumi config set --secret --path 'sshPasswords.a' <value>`"],
      ["grafanaAdminPassword", CLEAR + "`pulumi config set --secret grafanaAdminPassword <value>`"],
    ],
  },
];

describe("config: secrets refused in clear text", () => {
  for (const { name, config, secret, issues } of CASES) {
    it(`rejects ${name}`, () => {
      const found = cleartextSecretIssues(P, config, secret);
      const expected = issues.map(([path, message]) => ({ path, message }));
      expect(found).to.deep.equal(expected);
      expectCleanMessage(new FleetConfigError(found).message, expected);
    });
  }

  it("accepts secrets set with --secret, including a --path secret (Pulumi marks the whole top-level key)", () => {
    const config = {
      [`${P}:engineApiKey`]: "k",
      [`${P}:sshPrivateKey`]: "key",
      [`${P}:sshPasswords`]: '{"sim1":"p"}',
      [`${P}:sshPrivateKeys`]: '{"sim1":"k"}',
      [`${P}:grafanaAdminPassword`]: "g",
    };
    expect(cleartextSecretIssues(P, config, Object.keys(config))).to.deep.equal([]);
  });

  it("ignores other projects' keys and keys that are not credentials", () => {
    const config = { "other:engineApiKey": "k", [`${P}:sshPrivateKeyFile`]: "keys/fleet_ed25519", [`${P}:slo`]: "{}" };
    expect(cleartextSecretIssues(P, config, [])).to.deep.equal([]);
  });

  it("reads the SDK's secret key list, and treats a missing or garbled one as empty", () => {
    expect(parseSecretKeyList('["narwhal-fleet:engineApiKey","narwhal-fleet:sshPasswords"]')).to.deep.equal([
      "narwhal-fleet:engineApiKey",
      "narwhal-fleet:sshPasswords",
    ]);
    expect([parseSecretKeyList(undefined), parseSecretKeyList(""), parseSecretKeyList("{"), parseSecretKeyList('{"a":1}')]).to.deep.equal([[], [], [], []]);
  });

  it("words the fix command with --path only inside an object", () => {
    expect(secretSetCommand(["engineApiKey"])).to.equal("pulumi config set --secret engineApiKey <value>");
    expect(secretSetCommand(["sshPasswords", "sim1"])).to.equal("pulumi config set --secret --path 'sshPasswords.sim1' <value>");
  });
});
