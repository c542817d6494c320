"use strict";
/**
 * The Pulumi SDK stamps every promise it makes with `new Error().stack`, kept only to name a leaked promise
 * when the program exits with one pending, and printed only when `PULUMI_DEBUG_PROMISE_LEAKS` is set
 * (runtime/debuggable.js `leakedPromises`). Its runner formats every stack through source-map-support,
 * which maps each frame through the SDK's source maps: with the hundreds of outputs a fleet makes, that was
 * the largest single cost of running the program. Unless leaks are being debugged, a stamp is the bare
 * word `Error`, its frames never formatted; with the variable set, stamps keep every frame, as V8 names
 * them. Every other stack, such as a real error's, is still mapped.
 */
const mapped = Error.prepareStackTrace;
if (mapped) {
  const debuggingLeaks = !!process.env.PULUMI_DEBUG_PROMISE_LEAKS;
  const stamp = debuggingLeaks ? (frames) => `Error\n${frames.map((f) => `    at ${f}`).join("\n")}` : () => "Error";
  Error.prepareStackTrace = (error, frames) =>
    error.message === "" && frames.length > 0 && frames[0].getFunctionName() === "debuggablePromise" ? stamp(frames) : mapped(error, frames);
}
