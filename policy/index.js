"use strict";
// The pack's entry for @pulumi/pulumi's policy runner: index.ts, loaded as JavaScript compiled once
// (tools/ts-require.js), the way program.js loads the Pulumi program.
require("../tools/ts-require.js");
module.exports = require("./index.ts");
