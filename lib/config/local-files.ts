/**
 * Files on this machine that config names: the SSH private key (`sshPrivateKeyFile`) and the OpenSSH
 * client config (`ssh.configFile`, else ~/.ssh/config). Reading one can fail long after the config
 * parsed; these word that failure as a config problem at the key the user wrote, with the fix, instead
 * of a raw ENOENT.
 */
import type { ConfigIssue } from "./errors";

/** Why a read failed, in words, from Node's error code. */
export function readFailure(code: string | undefined): string {
  switch (code) {
    case "ENOENT":
      return "no such file";
    case "EACCES":
    case "EPERM":
      return "permission denied";
    case "EISDIR":
      return "it is a folder, not a file";
    case "ENOTDIR":
      return "a part of the path is not a folder";
    default:
      return code ? `cannot be read (${code})` : "cannot be read";
  }
}

/** `"~/k" (resolved to /proj/~/k)` when the program read it somewhere other than written. */
function where(written: string, resolved: string): string {
  return written === resolved ? resolved : `${written} (read as ${resolved})`;
}

export function keyFileIssue(written: string, resolved: string, code: string | undefined): ConfigIssue {
  const tilde = written.startsWith("~") ? '; "~" is not expanded here, write the full path' : "";
  return {
    path: "sshPrivateKeyFile",
    message:
      `${where(written, resolved)}: ${readFailure(code)}${tilde}; point it at the SSH private key the hosts accept ` +
      "(`pulumi config set sshPrivateKeyFile /full/path/to/key`), or store the key itself as a secret " +
      "(`pulumi config set --secret sshPrivateKey < /full/path/to/key`) and remove sshPrivateKeyFile",
  };
}

/** @param written the `ssh.configFile` value, or undefined when the default ~/.ssh/config was read */
export function sshConfigIssue(written: string | undefined, resolved: string, code: string | undefined): ConfigIssue {
  const fix =
    written === undefined
      ? "make it readable by this user, or point ssh.configFile at another OpenSSH client config"
      : code === "ENOENT"
        ? "name an OpenSSH client config file that exists, or remove the key"
        : "make it readable by this user, or name another OpenSSH client config file, or remove the key";
  return { path: "ssh.configFile", message: `${written === undefined ? `the default ${resolved}` : where(written, resolved)}: ${readFailure(code)}; ${fix}` };
}

/** The IdentityFile an ssh_config Host block names for a fleet host exists but cannot be read. */
export function identityFileMessage(alias: string, file: string, code: string | undefined): string {
  return (
    `host ${alias}: the IdentityFile its ssh_config entry names, ${file}: ${readFailure(code)}; make it readable by this user, ` +
    `or give the host's key as a secret (\`pulumi config set --secret --path 'sshPrivateKeys.${alias}' < ${file}\`)`
  );
}

export const MISSING_API_KEY: ConfigIssue = {
  path: "engineApiKey",
  message: "missing; engines require an API key: set one with `pulumi config set --secret engineApiKey <key>`",
};
