/**
 * Reads a runbook `.env` the way the runbook loads it (`set -a; . ./.env`): `KEY=value` lines, an
 * optional `export`, `#` comments, single quotes taken literally, double quotes with the shell's
 * backslash escapes. Anything a POSIX shell would expand (`$VAR`, `$(...)`, backticks) is refused rather
 * than guessed, naming the line: the importer never runs the file.
 */

export interface EnvEntry {
  readonly key: string;
  readonly value: string;
  readonly line: number;
}

export interface EnvFile {
  readonly entries: ReadonlyArray<EnvEntry>;
  /** Lines that are not assignments, or that need a shell to read. */
  readonly problems: ReadonlyArray<{ line: number; message: string }>;
}

const ASSIGNMENT = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$/;

function unquote(raw: string): { value: string } | { problem: string } {
  let out = "";
  let i = 0;
  while (i < raw.length) {
    const c = raw[i];
    if (c === "'") {
      const end = raw.indexOf("'", i + 1);
      if (end < 0) return { problem: "an unterminated single quote" };
      out += raw.slice(i + 1, end);
      i = end + 1;
    } else if (c === '"') {
      let j = i + 1;
      for (; j < raw.length && raw[j] !== '"'; j++) {
        const d = raw[j];
        if (d === "\\" && j + 1 < raw.length && '"\\$`'.includes(raw[j + 1])) out += raw[++j];
        else if (d === "$" || d === "`") return { problem: "a shell expansion inside double quotes; write the value literally" };
        else out += d;
      }
      if (j >= raw.length) return { problem: "an unterminated double quote" };
      i = j + 1;
    } else if (c === "#" && (i === 0 || /\s/.test(raw[i - 1]))) {
      break;
    } else if (/\s/.test(c)) {
      if (raw.slice(i).trim() === "" || raw.slice(i).trimStart().startsWith("#")) break;
      return { problem: "an unquoted space (the shell would run the rest as a command); quote the value" };
    } else if (c === "\\" && i + 1 < raw.length) {
      out += raw[i + 1];
      i += 2;
    } else if (c === "$" || c === "`") {
      return { problem: "a shell expansion; write the value literally" };
    } else {
      out += c;
      i += 1;
    }
  }
  return { value: out };
}

export function parseEnvFile(text: string): EnvFile {
  const entries: EnvEntry[] = [];
  const problems: Array<{ line: number; message: string }> = [];
  text.split(/\r?\n/).forEach((rawLine, index) => {
    const line = index + 1;
    const trimmed = rawLine.trim();
    if (trimmed === "" || trimmed.startsWith("#")) return;
    if (/^set\s+[-+][a-z]+$/.test(trimmed)) return; // `set +x` guards the runbook puts around secrets
    const m = ASSIGNMENT.exec(trimmed);
    if (!m) {
      problems.push({ line, message: "not a KEY=value assignment" });
      return;
    }
    const parsed = unquote(m[2]);
    if ("problem" in parsed) problems.push({ line, message: `${m[1]}: ${parsed.problem}` });
    else entries.push({ key: m[1], value: parsed.value, line });
  });
  return { entries, problems };
}
