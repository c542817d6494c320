import * as pulumi from "@pulumi/pulumi";
import type * as command from "@pulumi/command";
import { storedLoginOf, type StoredLogin } from "../lib/ssh/stored-login";

/**
 * A provider's login inputs from the connection a host's commands use: address, user and pinned keys in
 * the clear (they are not secrets, though the connection as a whole is secret because it holds the key),
 * the credentials as their own secret inputs. `alias` as in `storedLoginOf`.
 */
export function loginInputs(
  connection: pulumi.Input<command.types.input.remote.ConnectionArgs>,
  alias?: string,
): { login: pulumi.Output<StoredLogin>; privateKey: pulumi.Output<string | undefined>; password: pulumi.Output<string | undefined> } {
  const c = pulumi.output(connection);
  const login = c.apply((c) => storedLoginOf(c, alias));
  return { login: pulumi.unsecret(login), privateKey: c.apply((c) => c.privateKey), password: c.apply((c) => c.password) };
}

/** The credentials of `loginInputs` as one secret object, with only the ones the login has. */
export function loginSecrets(l: Pick<ReturnType<typeof loginInputs>, "privateKey" | "password">): pulumi.Output<{ privateKey?: string; password?: string }> {
  return pulumi.secret(pulumi.all([l.privateKey, l.password]).apply(([privateKey, password]) => ({ ...(privateKey ? { privateKey } : {}), ...(password ? { password } : {}) })));
}
