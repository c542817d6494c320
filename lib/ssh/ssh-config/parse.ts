/**
 * One ssh_config file as OpenSSH splits it: a keyword (case-insensitive, lowered here), then arguments
 * separated by whitespace, the first optionally by `=`; double quotes keep spaces inside one argument and
 * an unquoted `#` that starts a word ends the line.
 */
export interface SshConfigLine {
  readonly keyword: string;
  readonly args: readonly string[];
  /** 1-based, for messages that point at the line. */
  readonly line: number;
}

export class SshConfigError extends Error {
  readonly code = "NARWHAL_SSH_CONFIG";
  override name = "SshConfigError";
}

function words(text: string, where: string): string[] {
  const out: string[] = [];
  let i = 0;
  while (i < text.length) {
    while (i < text.length && /\s/.test(text[i])) i++;
    if (i >= text.length || text[i] === "#") break;
    let word = "";
    while (i < text.length && !/\s/.test(text[i])) {
      if (text[i] === '"') {
        const end = text.indexOf('"', i + 1);
        if (end < 0) throw new SshConfigError(`${where}: unbalanced quote; close the quoted argument or remove the quote`);
        word += text.slice(i + 1, end);
        i = end + 1;
      } else word += text[i++];
    }
    out.push(word);
  }
  return out;
}

/** @param file named in errors, e.g. `/fixture/home/.ssh/config` */
export function parseSshConfigText(text: string, file: string): SshConfigLine[] {
  const lines: SshConfigLine[] = [];
  text.split("\n").forEach((raw, index) => {
    const where = `${file} line ${index + 1}`;
    // The keyword ends at whitespace or the first "=": `HostName=a`, `HostName = a` and `HostName a` agree.
    const m = /^\s*([^\s=#"]+)\s*(?:=\s*)?(.*)$/.exec(raw.replace(/\r$/, ""));
    if (!m) {
      if (raw.trim() && !raw.trim().startsWith("#")) throw new SshConfigError(`${where}: cannot read ${JSON.stringify(raw.trim())}; a line is a keyword and its arguments`);
      return;
    }
    lines.push({ keyword: m[1].toLowerCase(), args: words(m[2], where), line: index + 1 });
  });
  return lines;
}
