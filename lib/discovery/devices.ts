/**
 * Declared device paths (accelerator devices plus transfer devices) checked on the host, as the
 * runbook's Gate C does before launch: each path present or missing, and its words when any is missing.
 */

export interface DevicePath {
  readonly path: string;
  readonly present: boolean;
  /** From `stat -L` when present: octal mode, owner, group, file type (e.g. "character special file"). */
  readonly mode?: string;
  readonly owner?: string;
  readonly group?: string;
  readonly type?: string;
}

export interface DeviceCheck {
  readonly paths: ReadonlyArray<DevicePath>;
  readonly missing: ReadonlyArray<string>;
  /** The runbook's sentence plus which paths, or null when every declared path is present. */
  readonly message: string | null;
}

export const RESTORE_DEVICES = "Restore the declared device exposure before launch.";

/** A device path travels as one line in the probe's output and one word on its command line. */
export function devicePathProblem(path: string): string | undefined {
  if (!path.startsWith("/")) return `device path ${JSON.stringify(path)} is not absolute`;
  if (/[\t\n\r]/.test(path)) return `device path ${JSON.stringify(path)} contains a tab or newline`;
  return undefined;
}

/**
 * Parses the probe's `devices` section: `present\t<path>[\t<mode>\t<owner>\t<group>\t<type>]` or
 * `missing\t<path>` per declared path. When `declared` is given, a path the output does not mention
 * throws (the probe was cut short).
 */
export function parseDeviceSection(text: string, declared?: ReadonlyArray<string>, host?: string): DeviceCheck {
  const paths: DevicePath[] = [];
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    const [state, path, mode, owner, group, type] = line.split("\t");
    if ((state !== "present" && state !== "missing") || !path) throw new Error(`unexpected device line ${JSON.stringify(line.slice(0, 200))}`);
    const entry: DevicePath =
      state === "present" && mode !== undefined
        ? { path, present: true, mode, owner, group, type }
        : { path, present: state === "present" };
    paths.push(entry);
  }
  if (declared) {
    const unreported = declared.filter((d) => !paths.some((p) => p.path === d));
    if (unreported.length > 0) throw new Error(`the probe did not report ${unreported.join(", ")}`);
  }
  return deviceCheck(paths, host);
}

/** The verdict over per-path observations, in the runbook's words. */
export function deviceCheck(paths: ReadonlyArray<DevicePath>, host?: string): DeviceCheck {
  const missing = paths.filter((p) => !p.present).map((p) => p.path);
  const message =
    missing.length === 0 ? null : `${RESTORE_DEVICES} Missing${host ? ` on host ${host}` : ""}: ${missing.join(", ")}.`;
  return { paths, missing, message };
}
