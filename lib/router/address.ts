/** Where the router is reached: from its own host (its bind address) and from clients (its URL). */

/** The address a client on the router host uses for a bind address (a wildcard bind is reached on loopback). */
export function localAddress(bindAddress: string): string {
  if (bindAddress === "0.0.0.0") return "127.0.0.1";
  if (bindAddress === "::") return "[::1]";
  return bindAddress.includes(":") ? `[${bindAddress}]` : bindAddress;
}

/** The router's URL as a client names it, from any address that reaches the router host. */
export function routerUrl(address: string, port: number): string {
  return `http://${address.includes(":") && !address.startsWith("[") ? `[${address}]` : address}:${port}`;
}
