/**
 * A look at the host for the paths a resource made there, run at refresh: what a cleanup, a restored disk
 * or a reimage took away is made again by the next `up` instead of being trusted from state.
 */
import { shq } from "./shell";

/** A path the host must still hold: a file, or an executable file. */
export interface ExpectedPath {
  readonly path: string;
  readonly executable?: boolean;
}

/** Prints `missing <path>` for each expected path the host lacks, in order, and nothing else. */
export function presenceScript(paths: ReadonlyArray<ExpectedPath>): string {
  return paths.map((p) => `[ -${p.executable ? "x" : "f"} ${shq(p.path)} ] || echo ${shq(`missing ${p.path}`)}\n`).join("");
}

/** The paths presenceScript found missing, in its order. */
export function missingPaths(stdout: string): string[] {
  return stdout.split("\n").flatMap((line) => (line.startsWith("missing ") ? [line.slice("missing ".length)] : []));
}
