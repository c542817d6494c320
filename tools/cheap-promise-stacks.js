"use strict";
/**
 * The Pulumi SDK stamps every promise it makes (runtime/debuggable.js, debuggablePromise) with
 * `new Error().stack`, kept only to name a leaked promise when the program exits with one pending, and
 * printed only when `PULUMI_DEBUG_PROMISE_LEAKS` is set. Capturing those frames, and the runner's
 * source-map-support formatting them, was the largest single cost of running the program with the
 * hundreds of outputs a fleet makes. Unless leaks are being debugged, each stamp is taken with no frames
 * (the bare word `Error`): the SDK's own function still runs and tracks the promise for its leak check,
 * and every other stack keeps its frames. The SDK calls it through its module's exports
 * (`debuggable_1.debuggablePromise(...)`), so replacing the export reaches every caller.
 */
const path = require("node:path");

if (!process.env.PULUMI_DEBUG_PROMISE_LEAKS) {
  const sdk = path.dirname(require.resolve("@pulumi/pulumi/package.json", { paths: [path.resolve(__dirname, "..")] }));
  const debuggable = require(path.join(sdk, "runtime", "debuggable.js"));
  const stamp = debuggable.debuggablePromise;
  debuggable.debuggablePromise = function debuggablePromise(p, ctx) {
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    try {
      return stamp(p, ctx);
    } finally {
      Error.stackTraceLimit = limit;
    }
  };
}
