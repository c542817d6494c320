/**
 * The program's one local write for the components: the known_hosts files the docker backend's ssh reads
 * (components/runtime/docker-host.ts says why it must exist before the provider dials). A component
 * calls this writer, handed down from here, inside the apply that yields the provider's `sshOpts`, since
 * the key to pin is only known there and components do no I/O themselves.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import type { KnownHostsFiles } from "../components/runtime/types";

/**
 * Writes the known_hosts file (0600 in a 0700 folder), replacing it in one rename, so an ssh that reads
 * it meanwhile sees the old keys or the new ones, never half a file. Unchanged text is not rewritten.
 */
export function writeKnownHosts(file: string, text: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  if (fs.existsSync(file) && fs.readFileSync(file, "utf8") === text) return;
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, text, { mode: 0o600 });
  fs.renameSync(tmp, file);
}

/** The stack's known_hosts files: in `runs/<stack>/ssh` of the program directory, where a destroy finds them again. */
export function knownHostsFiles(stack: string): KnownHostsFiles {
  return { dir: path.resolve("runs", stack, "ssh"), write: writeKnownHosts };
}
