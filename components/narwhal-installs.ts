import * as pulumi from "@pulumi/pulumi";
import type * as command from "@pulumi/command";
import type { FleetSpec } from "../lib/config/types";
import { stackDirOn } from "../lib/fleet/state-dir";
import { NarwhalInstall } from "./router/install";

export interface NarwhalInstallsArgs {
  spec: FleetSpec;
  stack: string;
  /** The router host's alias. */
  routerHost: string;
  /** How to reach each host, as discovery verified it. */
  connectionOf: (alias: string) => command.types.input.remote.ConnectionArgs;
}

/**
 * The hosts Gate B installs narwhal-inference on, in config order: the router host (the router and its
 * tools run from its install) and every engine host, whose attestation sidecars run the install's
 * `narwhal-attest` unless `attestation.command` names one the operator provides.
 */
export function installHosts(spec: FleetSpec, routerHost: string): string[] {
  const sidecars = spec.attestation.command === undefined ? new Set(spec.engines.map((e) => e.host)) : new Set<string>();
  return spec.hosts.map((h) => h.alias).filter((alias) => alias === routerHost || sidecars.has(alias));
}

/**
 * Gate B on every host that runs Narwhal's code, one install per host (`<prefix>-<alias>-narwhal`, in the
 * stack's folder on that host), so a router host that also runs engines installs once. The router host's
 * install was once its router component's child: it keeps that state through an alias.
 */
export function narwhalInstalls(prefix: string, args: NarwhalInstallsArgs, parent: pulumi.Resource): Map<string, NarwhalInstall> {
  const { spec, stack, routerHost } = args;
  const formerParent = pulumi.createUrn(`${prefix}-router-host`, "narwhal:router:RouterHost", parent);
  return new Map(
    installHosts(spec, routerHost).map((alias) => [
      alias,
      new NarwhalInstall(
        `${prefix}-${alias}-narwhal`,
        {
          narwhal: spec.router.narwhal,
          connection: args.connectionOf(alias),
          installDir: `${stackDirOn(spec, alias, stack)}/narwhal`,
          hostAlias: alias,
          stack,
          ...(alias === routerHost ? { formerly: { parent: formerParent, name: `${prefix}-router-host-narwhal` } } : {}),
        },
        { parent },
      ),
    ]),
  );
}
