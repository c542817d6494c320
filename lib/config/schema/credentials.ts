/**
 * The keys read apart from the plain schema (entry/stack-config.ts): credentials, which stay Pulumi
 * secrets and never pass through the parser, and the path of a key file. They are described here, in
 * the same form as the rest, so docs/config.md lists every key; a unit test holds the secret ones equal
 * to SECRET_CONFIG_KEYS.
 */
import { z } from "zod";

const perHost = (what: string) => z.record(z.string(), z.string()).meta({ expected: `an object of host alias to ${what}` });

export const CredentialKeysSchema = z
  .strictObject({
    engineApiKey: z.string().meta({
      secret: true,
      expected: "a string",
      description: "The API key engines require from their clients (the router, the gates' probes). Set it with `pulumi config set --secret engineApiKey <key>`.",
    }),
    sshPrivateKey: z
      .string()
      .optional()
      .meta({ secret: true, expected: "an OpenSSH private key", description: "The private key for every host with `auth: key` that has no key of its own." }),
    sshPrivateKeys: perHost("private key")
      .optional()
      .meta({ secret: true, description: "One private key per host alias (`sshPrivateKeys.<alias>`), over `sshPrivateKey`." }),
    sshPasswords: perHost("password")
      .optional()
      .meta({ secret: true, description: "The password of each host with `auth: password` (`sshPasswords.<alias>`)." }),
    grafanaAdminPassword: z
      .string()
      .optional()
      .meta({ secret: true, expected: "a string", description: "Grafana's admin password; needed when `observability.runtime` is `container`." }),
    sshPrivateKeyFile: z.string().optional().meta({
      expected: "a path relative to the project",
      description:
        "Reads the stack's private key from a file on this machine instead of `sshPrivateKey`, and keeps it a Pulumi " +
        "secret; the dev stack uses it for the simulator's key.",
    }),
  })
  .describe(
    "Keys read apart from the rest: credentials, each set with `pulumi config set --secret` (a value set in clear " +
      "text is refused, naming the command that stores it encrypted), and the key file path.",
  );
