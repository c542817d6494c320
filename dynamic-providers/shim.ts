import type * as pulumi from "@pulumi/pulumi";

/**
 * Builds the provider object Pulumi serialises into state. Pulumi copies a dynamic provider's local
 * modules by value into every resource's `__provider`, so an edit of lib/ would show as a change on
 * every resource and delete/refresh would keep running the old copy. Instead the serialised object is
 * this shim alone: it holds one relative path and, at call time, loads the implementation from the
 * project the CLI runs in (the provider host's working directory is the program directory).
 */
export function providerShim(implementation: string): pulumi.dynamic.ResourceProvider {
  // One object per implementation: the SDK serialises a provider object once and reuses the text for every
  // resource given the same object, so each resource type costs one serialisation per program run.
  let shim = shims.get(implementation);
  if (!shim) shims.set(implementation, (shim = shimFor(implementation)));
  return shim;
}

const shims = new Map<string, pulumi.dynamic.ResourceProvider>();

function shimFor(implementation: string): pulumi.dynamic.ResourceProvider {
  // Everything around a call lives in shim-host.ts, loaded at call time through tools/ts-require.js (each
  // module compiled once into a cache; Node keeps it after its first load): this text is all that is
  // serialised, and every dynamic resource carries it twice in the state.
  const host = () => require(require("node:path").join(process.cwd(), "tools", "ts-require.js")).load("dynamic-providers/shim-host.ts");
  return {
    check: (olds, news) => host().call(implementation, "check", [olds, news]),
    diff: (id, olds, news) => host().call(implementation, "diff", [id, olds, news]),
    create: (inputs) => host().call(implementation, "create", [inputs]),
    read: (id, props) => host().call(implementation, "read", [id, props]),
    update: (id, olds, news) => host().call(implementation, "update", [id, olds, news]),
    delete: (id, props) => host().call(implementation, "delete", [id, props]),
  };
}
