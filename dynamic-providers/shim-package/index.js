"use strict";
/**
 * The provider object every dynamic resource serialises as its `__provider` (dynamic-providers/shim.ts).
 *
 * Pulumi copies a provider's code into each resource's state, unless the provider is a package installed
 * under node_modules: then the state holds `require("narwhal-fleet-provider-shim")`, about 300 characters
 * where the copied shim took 2,100, in every dynamic resource's inputs and outputs, and every checkpoint
 * the CLI writes carries them. So this folder is installed as a package, copied and not linked (.npmrc:
 * `install-links`): a link resolves to this folder, outside node_modules, and would be copied again.
 *
 * At call time it loads dynamic-providers/shim-host.ts from the project the CLI runs in (the provider
 * host's working directory is the program directory), which runs the module the resource names.
 */
const host = () => require(require("node:path").join(process.cwd(), "tools", "ts-require.js")).load("dynamic-providers/shim-host.ts");

exports.check = (olds, news) => host().dispatch("check", [olds, news]);
exports.diff = (id, olds, news) => host().dispatch("diff", [id, olds, news]);
exports.create = (inputs) => host().dispatch("create", [inputs]);
exports.read = (id, props) => host().dispatch("read", [id, props]);
exports.update = (id, olds, news) => host().dispatch("update", [id, olds, news]);
exports.delete = (id, props) => host().dispatch("delete", [id, props]);
