import type * as pulumi from "@pulumi/pulumi";

/**
 * Builds the provider object Pulumi serialises into state. Pulumi copies a dynamic provider's local
 * modules by value into every resource's `__provider`, so an edit of lib/ would show as a change on
 * every resource and delete/refresh would keep running the old copy. Instead the serialised object is
 * this shim alone: it holds one relative path and, at call time, loads the implementation from the
 * project the CLI runs in (the provider host's working directory is the program directory).
 */
export function providerShim(implementation: string): pulumi.dynamic.ResourceProvider {
  const load = (): pulumi.dynamic.ResourceProvider => {
    require("ts-node").register({ transpileOnly: true });
    return require(require("node:path").join(process.cwd(), implementation)).provider;
  };
  return {
    check: (olds, news) => (load().check ? load().check!(olds, news) : Promise.resolve({ inputs: news })),
    diff: (id, olds, news) => load().diff!(id, olds, news),
    create: (inputs) => load().create(inputs),
    read: (id, props) => (load().read ? load().read!(id, props) : Promise.resolve({ id, props })),
    update: (id, olds, news) => load().update!(id, olds, news),
    delete: (id, props) => (load().delete ? load().delete!(id, props) : Promise.resolve()),
  };
}
