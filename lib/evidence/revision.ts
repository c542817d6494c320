import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";

/**
 * What makes up the program: the files and folders whose contents decide what it does. Tests, the
 * simulator, docs and everything installed or produced (node_modules, runs, the toolchain) are not it.
 */
export const PROGRAM_SOURCES = ["index.ts", "program.js", "package.json", "package-lock.json", "Pulumi.yaml", "tsconfig.json", "components", "dynamic-providers", "entry", "lib", "policy", "scripts", "tools"];
const SKIPPED = new Set(["node_modules", ".git", ".tools", "runs"]);
/** Characters of the tree digest kept: 64 bits, past any chance collision among a program's releases. */
export const TREE_DIGEST_CHARS = 16;

function filesUnder(root: string, relative: string, out: string[]): void {
  const full = path.join(root, relative);
  let stat: fs.Stats;
  try {
    stat = fs.lstatSync(full);
  } catch {
    return; // a release may leave out what it does not need
  }
  if (stat.isFile()) out.push(relative);
  else if (stat.isDirectory()) {
    for (const name of fs.readdirSync(full).sort()) if (!SKIPPED.has(name)) filesUnder(root, path.posix.join(relative, name), out);
  }
}

/**
 * `narwhal-fleet@<version>+tree:<sha256 prefix>`: the package version and a digest over the program's
 * source files (each one's path and bytes, in sorted order), so an unpacked release still names exactly
 * the source it ran, and two trees that differ in one byte name different revisions.
 */
export function treeRevision(projectRoot: string): string {
  const files: string[] = [];
  for (const entry of PROGRAM_SOURCES) filesUnder(projectRoot, entry, files);
  const hash = createHash("sha256");
  for (const file of files.sort()) {
    const bytes = fs.readFileSync(path.join(projectRoot, file));
    hash.update(`${file}\0${bytes.length}\0`).update(bytes);
  }
  let version = "unknown";
  try {
    const parsed = JSON.parse(fs.readFileSync(path.join(projectRoot, "package.json"), "utf8")) as { version?: unknown };
    if (typeof parsed.version === "string" && /^[0-9A-Za-z.+-]+$/.test(parsed.version)) version = parsed.version;
  } catch {
    // no package.json: the tree digest alone still names the source
  }
  return `narwhal-fleet@${version}+tree:${hash.digest("hex").slice(0, TREE_DIGEST_CHARS)}`;
}

/** The tree digest, once per project folder and process: a provider process writes many records. */
const trees = new Map<string, string>();

/**
 * This program's full git revision, `-dirty` when the working tree has changes: the runbook's
 * deployment record wants the source every measurement was taken with. Outside a git checkout (an
 * unpacked release) it is the {@link treeRevision}, never a placeholder.
 */
export function sourceRevision(projectRoot: string): string {
  try {
    const git = (...args: string[]) => execFileSync("git", ["-C", projectRoot, ...args], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
    // A release unpacked inside some other checkout is not that checkout's revision.
    if (path.resolve(git("rev-parse", "--show-toplevel")) !== path.resolve(projectRoot)) throw new Error("not this program's checkout");
    const head = git("rev-parse", "HEAD");
    const dirty = git("status", "--porcelain", "--untracked-files=no") !== "";
    return dirty ? `${head}-dirty` : head;
  } catch {
    let tree = trees.get(projectRoot);
    if (tree === undefined) trees.set(projectRoot, (tree = treeRevision(projectRoot)));
    return tree;
  }
}
