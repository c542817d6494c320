"use strict";
// The Pulumi program's entry (Pulumi.yaml `main`): index.ts and everything it imports, loaded as
// JavaScript compiled once (tools/ts-require.js) instead of through ts-node on every CLI run.
require("./tools/ts-require.js");
require("./tools/cheap-promise-stacks.js");
require("./tools/engine-gone.js");
require("./tools/domain-errors.js");
module.exports = require("./index.ts");
