/**
 * Reads a user's ssh_config with its `Include` files, as ssh_config(5) describes them: each argument is a
 * path, `~` is the home folder, a relative path is relative to `~/.ssh` (this program reads user configs
 * only), and `*`, `?` and `[...]` glob (matches sorted, dot files only for a pattern starting with ".").
 * A path that names nothing is skipped, as ssh skips it. Included files are read whether or not the block
 * that includes them applies to a host: which hosts it applies to is decided per host, in resolve.ts.
 *
 * The disk is reached only through `SshConfigFiles`, so this stays pure and tests give files in memory.
 */
import { parseSshConfigText, SshConfigError, type SshConfigLine } from "./parse";

/** ssh's own limit on nested includes (READCONF_MAX_DEPTH). */
export const MAX_INCLUDE_DEPTH = 16;

export interface SshConfigFiles {
  /** The file's text; throws a Node error with `code` (ENOENT, EACCES, ...) when it cannot be read. */
  readFile(path: string): string;
  /** Names in a folder; throws a Node error with `code` when it is not one. */
  listDir(path: string): string[];
}

export interface SshConfigFile {
  readonly path: string;
  readonly lines: readonly LoadedLine[];
}

/** A line; an `Include` line carries the files it named, in the order ssh reads them. */
export type LoadedLine = SshConfigLine & { readonly included?: readonly SshConfigFile[] };

export interface LoadOptions {
  readonly home: string;
  readonly files: SshConfigFiles;
}

const GLOB = /[*?[]/;

function errno(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException).code;
}

/** A glob segment as a RegExp: `*`, `?` and `[...]` (with `!` or `^` negation), everything else literal. */
function segmentPattern(segment: string): RegExp {
  let re = "";
  for (let i = 0; i < segment.length; i++) {
    const c = segment[i];
    if (c === "*") re += "[^/]*";
    else if (c === "?") re += "[^/]";
    else if (c === "[" && segment.indexOf("]", i + 2) > 0) {
      const end = segment.indexOf("]", i + 2);
      const body = segment.slice(i + 1, end).replace(/^[!^]/, "^").replace(/\\/g, "\\\\");
      re += `[${body}]`;
      i = end;
    } else re += c.replace(/[.+^${}()|[\]\\]/g, "\\$&");
  }
  return new RegExp(`^${re}$`);
}

/** glob(3) over `files`: absolute `pattern` in, sorted existing paths out. */
export function expandIncludePattern(pattern: string, files: SshConfigFiles): string[] {
  let paths = [""];
  const segments = pattern.split("/").slice(1);
  segments.forEach((segment, index) => {
    const last = index === segments.length - 1;
    if (!GLOB.test(segment)) {
      paths = paths.map((p) => `${p}/${segment}`);
      return;
    }
    const re = segmentPattern(segment);
    paths = paths.flatMap((dir) => {
      let names: string[];
      try {
        names = files.listDir(dir || "/");
      } catch {
        return []; // not a folder, or not there: the pattern matches nothing below it
      }
      return names.filter((n) => re.test(n) && (segment.startsWith(".") || !n.startsWith("."))).map((n) => `${dir}/${n}`);
    });
    if (!last) paths = paths.filter((p) => isDir(p, files));
  });
  return paths.sort();
}

function isDir(p: string, files: SshConfigFiles): boolean {
  try {
    files.listDir(p);
    return true;
  } catch {
    return false;
  }
}

/** Where `Include <arg>` looks, before globbing. */
export function includePath(arg: string, home: string): string {
  if (arg === "~" || arg.startsWith("~/")) return home + arg.slice(1);
  if (arg.startsWith("/")) return arg;
  return `${home}/.ssh/${arg}`;
}

function load(path: string, text: string, opts: LoadOptions, chain: string[]): SshConfigFile {
  const lines: LoadedLine[] = parseSshConfigText(text, path).map((line) => {
    if (line.keyword !== "include") return line;
    const where = `${path} line ${line.line}`;
    if (line.args.length === 0) throw new SshConfigError(`${where}: Include names no file; give a path or remove the line`);
    const included: SshConfigFile[] = [];
    for (const arg of line.args) {
      for (const file of expandIncludePattern(includePath(arg, opts.home), opts.files)) {
        if (chain.includes(file)) {
          throw new SshConfigError(`${where}: Include ${arg} reads ${file} again inside itself (${[...chain, file].join(" -> ")}); remove one of these Include lines`);
        }
        // The new file's depth is chain.length (the top file is depth 0); ssh refuses beyond its limit.
        if (chain.length > MAX_INCLUDE_DEPTH) {
          throw new SshConfigError(`${where}: Include ${arg} nests more than ${MAX_INCLUDE_DEPTH} files deep, as ssh refuses too; flatten the includes`);
        }
        let body: string;
        try {
          body = opts.files.readFile(file);
        } catch (err) {
          if (errno(err) === "ENOENT") continue; // as ssh: a named file that is not there is skipped
          if (errno(err) === "EISDIR") continue;
          throw new SshConfigError(`${where}: Include ${arg}: ${file} cannot be read (${errno(err) ?? (err as Error).message}); make it readable by this user or remove the Include`);
        }
        included.push(load(file, body, opts, [...chain, file]));
      }
    }
    return { ...line, included };
  });
  return { path, lines };
}

/** Parses `text` (the file at `path`) and every file its `Include` lines name, recursively. */
export function loadSshConfig(path: string, text: string, opts: LoadOptions): SshConfigFile {
  return load(path, text, opts, [path]);
}
