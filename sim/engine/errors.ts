/**
 * The two ways `vllm serve` refuses to start, kept apart because they exit differently:
 * argparse rejects the command line with status 2; a config or engine check raises a Python exception
 * and the process exits 1 after printing `<ExceptionType>: <message>`.
 */

export const USAGE = "usage: vllm serve [model_tag] [options]";

/** A usage error: main prints USAGE and `vllm serve: error: <message>` and exits 2, as argparse does. */
export class ArgError extends Error {
  readonly code = "ARG_INVALID";
  readonly exitCode = 2;
}

/** A startup refusal: main prints `<pyType>: <message>` on stderr and exits 1. */
export class StartupError extends Error {
  readonly code = "STARTUP_REFUSED";
  readonly exitCode = 1;
  constructor(
    readonly pyType: string,
    message: string,
  ) {
    super(message);
  }
}
