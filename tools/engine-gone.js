"use strict";
/**
 * When the engine stops a run (a resource failed, e.g. an evidence store that refuses writes), the SDK's
 * calls still pending to the resource monitor fail with gRPC UNAVAILABLE or CANCELLED. @pulumi/pulumi
 * suppresses those, then re-raises each as an unhandled rejection (runtime/resource.js, runAsyncResourceOp),
 * and its runner prints a gRPC stack trace below the real failure the engine already reported. Such a
 * rejection only says the engine is gone, so the program ends there, failing, before the runner prints it.
 */
const ENGINE_GONE = new Set([1 /* CANCELLED */, 14 /* UNAVAILABLE */]);

/** A grpc-js ServiceError (code, details, metadata) that says the resource monitor is gone. */
function engineGone(err) {
  return typeof err === "object" && err !== null && ENGINE_GONE.has(err.code) && "metadata" in err && "details" in err;
}

// Prepended: listeners run in order, and the SDK's runner registered its own before the program loaded.
process.prependListener("unhandledRejection", (err) => {
  if (engineGone(err)) process.exit(1);
});

module.exports = { engineGone };
