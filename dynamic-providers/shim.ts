import type * as pulumi from "@pulumi/pulumi";

/**
 * The provider object Pulumi serialises into every dynamic resource's `__provider`. Pulumi copies a
 * provider's local modules by value into that text, so an edit of lib/ would show as a change on every
 * resource and delete/refresh would keep running the old copy. Instead the serialised object is this
 * shim alone: at call time it loads shim-host.ts from the project the CLI runs in (the provider host's
 * working directory is the program directory), which loads the module the resource names in its
 * `__implementation` prop (lib/shim-props.ts).
 *
 * One object for every resource type: the SDK serialises a provider object once per program run and
 * parses each of its functions to do so, which cost about 30 ms of CPU per type, on every preview and up.
 */
export const providerShim: pulumi.dynamic.ResourceProvider = (() => {
  // Everything around a call lives in shim-host.ts, loaded through tools/ts-require.js (each module compiled
  // once into a cache; Node keeps it after its first load): this text is all that is serialised, and every
  // dynamic resource carries it twice in the state.
  const host = () => require(require("node:path").join(process.cwd(), "tools", "ts-require.js")).load("dynamic-providers/shim-host.ts");
  return {
    check: (olds, news) => host().dispatch("check", [olds, news]),
    diff: (id, olds, news) => host().dispatch("diff", [id, olds, news]),
    create: (inputs) => host().dispatch("create", [inputs]),
    read: (id, props) => host().dispatch("read", [id, props]),
    update: (id, olds, news) => host().dispatch("update", [id, olds, news]),
    delete: (id, props) => host().dispatch("delete", [id, props]),
  };
})();
