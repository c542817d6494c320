"use strict";
// The Pulumi program's entry (Pulumi.yaml `main`): index.ts and everything it imports, loaded as
// JavaScript compiled once (tools/ts-require.js) instead of through ts-node on every CLI run.
require("./tools/lazy-closure-deps.js");
require("./tools/ts-require.js");
require("./tools/cheap-promise-stacks.js");
require("./tools/engine-gone.js");
require("./tools/domain-errors.js");
// An async main: the evidence store is checked before index.ts declares the first resource.
module.exports = async () => {
  await require("./entry/evidence-store.ts").checkEvidenceStore();
  return require("./index.ts");
};
