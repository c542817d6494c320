"use strict";
/**
 * The Pulumi SDK stamps every promise it makes with `new Error().stack`, kept only to name a leaked promise
 * if the program exits with one pending. Its runner formats every stack through source-map-support, which
 * maps each frame through the SDK's source maps: with the hundreds of outputs a fleet makes, that was the
 * largest single cost of running the program. Those stamps are formatted plainly here (frames as V8 names
 * them); every other stack, such as a real error's, is still mapped.
 */
const mapped = Error.prepareStackTrace;
if (mapped) {
  Error.prepareStackTrace = (error, frames) =>
    error.message === "" && frames.length > 0 && frames[0].getFunctionName() === "debuggablePromise"
      ? `Error\n${frames.map((f) => `    at ${f}`).join("\n")}`
      : mapped(error, frames);
}
