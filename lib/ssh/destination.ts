/** `user@host`, `host`, `user@[v6]` or an ssh_config alias, split into the parts a login needs. */
export function parseDestination(destination: string, defaultUser: string): { user: string; host: string } {
  const at = destination.lastIndexOf("@");
  const user = at >= 0 ? destination.slice(0, at) : defaultUser;
  const host = (at >= 0 ? destination.slice(at + 1) : destination).replace(/^\[(.*)\]$/, "$1");
  return { user, host };
}
