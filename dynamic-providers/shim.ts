import type * as pulumi from "@pulumi/pulumi";

/**
 * The provider object Pulumi serialises into every dynamic resource's `__provider`.
 *
 * Pulumi copies a provider's local modules by value into that text, so an edit of lib/ would show as a
 * change on every resource and delete/refresh would keep running the old copy. Instead the provider is
 * the package in ./shim-package, installed under node_modules: Pulumi serialises a package as a
 * `require` of it, so `__provider` is about 300 characters where the shim's own code took 2,100, in each
 * dynamic resource's inputs and outputs and so in every checkpoint. At call time it loads shim-host.ts
 * from the project the CLI runs in (the provider host's working directory is the program directory),
 * which loads the module the resource names in its `__implementation` prop (lib/shim-props.ts).
 *
 * One object for every resource type: the SDK serialises a provider object once per program run.
 */
export const providerShim = require("narwhal-fleet-provider-shim") as pulumi.dynamic.ResourceProvider;

/**
 * `__provider` as the SDK's closure serialiser writes it for providerShim, byte for byte (a test holds
 * the two equal). Each resource carries this text rather than asking the SDK to serialise the shim on
 * every run, which parses it with the TypeScript compiler: so the program never loads the compiler, nor
 * npm's arborist that comes with it (tools/lazy-closure-deps.js).
 */
export const PROVIDER_TEXT = `exports.handler = __f0;
const provider = require("narwhal-fleet-provider-shim/index.js");

function __f0() {
  return (function() {
    with({ this: undefined, arguments: undefined }) {

return () => provider;

    }
  }).apply(undefined, undefined).apply(this, arguments);
}
`;
