/** Quotes one word for a POSIX shell: the only way values reach a remote command line. */
export function shq(value: string | number): string {
  return `'${String(value).replace(/'/g, `'\\''`)}'`;
}

/** Renders an argv array as one shell command line. */
export function shellLine(argv: ReadonlyArray<string | number>): string {
  return argv.map(shq).join(" ");
}

/** `KEY='value'` lines, readable with `set -a; . file; set +a`. */
export function envFile(env: Readonly<Record<string, string>>): string {
  return Object.entries(env)
    .map(([k, v]) => {
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(k)) throw new Error(`not an environment variable name: ${k}`);
      return `${k}=${shq(v)}\n`;
    })
    .join("");
}
