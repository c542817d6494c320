"use strict";
/**
 * The program's own refusals (every lib/ error carries a `NARWHAL_*` code and a message written for the
 * operator) end the run as a `pulumi.RunError` does: the message alone, no frames. Thrown inside an
 * `apply`, such an error reaches the SDK's runner as an unhandled rejection, with one `error serializing
 * property "x": ` prefix per resource input it travelled through; the runner would otherwise print it
 * through util.inspect, which on a program's object graph costs tens of seconds of garbage collection.
 */
const SERIALIZING_PREFIX = /^(?:error serializing property "[^"]*": )+/;

/** Ours: an Error whose `code` names one of the program's refusals. */
function isDomainError(err) {
  return err instanceof Error && typeof err.code === "string" && err.code.startsWith("NARWHAL_");
}

/** Marks the error as the SDK's RunError (the brand its runner checks) and drops the serializing prefixes. */
function asRunError(err) {
  if (!isDomainError(err)) return err;
  err.message = err.message.replace(SERIALIZING_PREFIX, "");
  err.__pulumiRunError = true;
  return err;
}

// Prepended: listeners run in order, and the SDK's runner registered its own before the program loaded.
process.prependListener("unhandledRejection", asRunError);
process.prependListener("uncaughtException", asRunError);

module.exports = { asRunError, isDomainError };
