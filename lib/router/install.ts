/**
 * Gate B on one host (the router host, and every engine host for its attestation sidecars): the approved
 * narwhal-inference revision in a venv of its own, as the `create` and `delete` scripts of one remote
 * command. Each revision lives in its own folder, so a new revision installs beside the old one and the
 * old one goes only after everything that ran from it. A host without it is installed, not refused.
 */
import { createHash } from "node:crypto";
import { shq } from "../shell";
import { ATTEMPTS_DIR, ATTEMPTS_SH } from "../runtime/attempts";
import type { ExpectedPath } from "../host-paths";

/** pip's output of the latest install, in the revision's folder; a failed one's is kept in `attempts/` (lib/runtime/attempts.ts). */
export const INSTALL_LOG = "pip.log";

/** What is installed: a released version from the package index, or a source bundle checked by digest. */
export type NarwhalSource =
  | { readonly kind: "version"; readonly version: string }
  | { readonly kind: "bundle"; readonly sha256: string };

export interface InstallOptions {
  readonly source: NarwhalSource;
  /** The host's alias, named in every message of the script. */
  readonly host?: string;
  /** Folder on the host holding one subfolder per installed revision (0700). */
  readonly installDir: string;
  /**
   * A folder of wheels on the host (`pip --no-index --find-links`), for hosts that cannot reach the
   * package index; absent: the index.
   */
  readonly wheelhouse?: string;
  /** Where the bundle was copied on the host (bundle installs only). */
  readonly bundlePath?: string;
  /** Bounded wait for pip, seconds. */
  readonly timeoutS: number;
}

/** What the install marker records; also the JSON line the install script prints. */
export interface InstallMarker {
  /** `narwhal-inference==0.7.0`, or `bundle sha256:<hex>` for a source bundle. */
  readonly revision: string;
  /** The installed distribution's version, as its metadata states it. */
  readonly version: string;
  /** `sha256:` of the distribution's RECORD, which lists the digest of every file it installed. */
  readonly digest: string;
  readonly python: string;
  /** The venv's bin folder: `narwhal-serve`, `narwhal-check`, `narwhal-attest` and friends. */
  readonly binDir: string;
  readonly installedAt: string;
}

/** The host tools the runbook asks of any host that runs Narwhal commands, and what each is for. */
export const PREREQUISITES: ReadonlyArray<{ tool: string; why: string }> = [
  { tool: "git", why: "the runbook's source revision checks" },
  { tool: "make", why: "the runbook's Narwhal targets" },
  { tool: "curl", why: "health checks of the router and engines" },
  { tool: "sha256sum", why: "the install digest" },
  { tool: "flock", why: "one install at a time in a state folder hosts share" },
];

export function revisionOf(source: NarwhalSource): string {
  return source.kind === "version" ? `narwhal-inference==${source.version}` : `bundle sha256:${source.sha256}`;
}

/** The revision's own folder name: readable for a version, the digest's head for a bundle. */
export function revisionFolder(source: NarwhalSource): string {
  if (source.kind === "version") return `narwhal-inference-${source.version}`;
  return `bundle-${source.sha256.slice(0, 16)}`;
}

/** The revision's folder on the host: its venv, marker and pip log. */
export function revisionDir(o: Pick<InstallOptions, "installDir" | "source">): string {
  return `${o.installDir}/${revisionFolder(o.source)}`;
}

export function venvDir(o: Pick<InstallOptions, "installDir" | "source">): string {
  return `${revisionDir(o)}/venv`;
}

/** A short, stable key of everything that defines an install: a change of any part is a new install. */
export function installKey(o: InstallOptions): string {
  const parts = { revision: revisionOf(o.source), installDir: o.installDir, wheelhouse: o.wheelhouse ?? null };
  return "sha256:" + createHash("sha256").update(JSON.stringify(parts)).digest("hex");
}

const VERSION_CHECK = "import sys; sys.exit(0 if sys.version_info[:2] >= (3, 11) else 1)";
const MARKER_PY = [
  "import hashlib, importlib.metadata as m, json, sys",
  'd = m.distribution("narwhal-inference")',
  'record = d.read_text("RECORD") or ""',
  'print(json.dumps({"version": d.version, "digest": "sha256:" + hashlib.sha256(record.encode()).hexdigest(), "python": "%d.%d.%d" % sys.version_info[:3]}))',
].join("; ");

/**
 * Checks the prerequisites (one message per missing one, all at once), then installs into the
 * revision's folder unless its marker already records this revision with a digest that still matches.
 * Prints one JSON line: the install marker.
 */
export function installScript(o: InstallOptions): string {
  const revision = revisionOf(o.source);
  const who = o.host ? `narwhal install on host ${o.host}` : "narwhal install";
  const folder = revisionDir(o);
  const pipSource = o.wheelhouse ? `--no-index --find-links ${shq(o.wheelhouse)}` : "";
  const target = o.source.kind === "version" ? shq(`narwhal-inference==${o.source.version}`) : '"$bundle"';
  const bundleCheck =
    o.source.kind === "bundle"
      ? `bundle=${shq(o.bundlePath ?? "")}
if [ ! -f "$bundle" ]; then
  echo "${who}: the source bundle is not at $bundle on this host" >&2
  exit 1
fi
found=$(sha256sum "$bundle" | cut -d' ' -f1)
if [ "$found" != ${shq(o.source.sha256)} ]; then
  echo "${who}: source bundle digest mismatch: router.narwhal.sourceBundle.sha256 is ${o.source.sha256}, the bundle on the host hashes to $found; nothing was installed" >&2
  exit 1
fi
`
      : "";
  const wheelhouseCheck = o.wheelhouse
    ? `if [ ! -d ${shq(o.wheelhouse)} ]; then
  missing="$missing
  router.narwhal.wheelhouse ${o.wheelhouse} is not a folder on this host"
fi
`
    : "";
  const pipArgs = `install --quiet --disable-pip-version-check --no-input ${pipSource} ${target}`;
  const pipLine = `"$venv/bin/pip" ${pipArgs}`;
  // The command line a kept attempt names, with the folder spelt out.
  const pipCommand = `${folder}/venv/bin/pip ${pipArgs.replace('"$bundle"', shq(o.bundlePath ?? ""))}`;
  return `set -eu
${ATTEMPTS_SH}missing=""
py=""
for candidate in python3.13 python3.12 python3.11 python3; do
  if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c ${shq(VERSION_CHECK)} 2>/dev/null; then py=$(command -v "$candidate"); break; fi
done
if [ -z "$py" ]; then
  found=$(python3 --version 2>&1 || echo "no python3")
  missing="$missing
  Python 3.11 or newer is required (found: $found); install python3.11 or newer"
elif ! "$py" -c 'import venv, ensurepip' 2>/dev/null; then
  missing="$missing
  $py has no venv/ensurepip module; install the python3-venv package of that Python"
fi
${PREREQUISITES.map((p) => `command -v ${p.tool} >/dev/null 2>&1 || missing="$missing
  ${p.tool} is missing (needed for ${p.why}); install it"`).join("\n")}
${wheelhouseCheck}if [ -n "$missing" ]; then
  echo "${who}: the host lacks prerequisites:$missing" >&2
  exit 1
fi
${bundleCheck}folder=${shq(folder)}
venv="$folder/venv"
marker="$folder/install.json"
mkdir -p ${shq(o.installDir)} && chmod 700 ${shq(o.installDir)}
# Hosts whose state folder is one shared filesystem (NFS homes, or simulated hosts sharing /var) install
# one at a time: the first installs, the next ones adopt its marker below instead of racing its venv.
exec 9>>${shq(`${o.installDir}/.install.lock`)}
if ! flock -w ${o.timeoutS} 9; then
  echo "${who}: another install in ${o.installDir} still held its lock after ${o.timeoutS}s; wait for it or stop it, then run pulumi up again" >&2
  exit 1
fi
if [ -f "$marker" ] && [ -x "$venv/bin/narwhal-serve" ]; then
  # A finished install of this very revision is adopted when its files still hash as recorded.
  now=$("$venv/bin/python" -c ${shq(MARKER_PY)} 2>/dev/null || true)
  if [ -n "$now" ] && [ "$("$venv/bin/python" -c 'import json,sys; a=json.load(open(sys.argv[1])); b=json.loads(sys.argv[2]); print(a["revision"] == sys.argv[3] and a["digest"] == b["digest"])' "$marker" "$now" ${shq(revision)})" = True ]; then
    list_attempts "$folder/${ATTEMPTS_DIR}" ${INSTALL_LOG}
    cat "$marker"
    exit 0
  fi
fi
# Only what this install makes goes: the venv and marker. Failed attempts kept beside them stay.
rm -rf "$venv" "$marker" "$folder/${INSTALL_LOG}"
mkdir -p "$folder" && chmod 700 "$folder"
attempt_started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
"$py" -m venv "$venv"
pip_status=0
timeout ${o.timeoutS} ${pipLine} > "$folder/${INSTALL_LOG}" 2>&1 || pip_status=$?
if [ "$pip_status" -ne 0 ]; then
  echo "${who}: pip install ${revision} failed (exit $pip_status) or exceeded ${o.timeoutS}s; last lines of $folder/${INSTALL_LOG}:" >&2
  tail -n 20 "$folder/${INSTALL_LOG}" >&2
  keep_attempt "$folder/${ATTEMPTS_DIR}" "$attempt_started" "$pip_status" ${shq(`pip install ${revision} failed or exceeded ${o.timeoutS}s`)} ${shq(pipCommand)} "$folder/${INSTALL_LOG}"
  rm -rf "$venv"
  exit 1
fi
facts=$("$venv/bin/python" -c ${shq(MARKER_PY)})
${
  o.source.kind === "version"
    ? `if [ "$(printf '%s' "$facts" | "$venv/bin/python" -c 'import json,sys; print(json.load(sys.stdin)["version"])')" != ${shq(o.source.version)} ]; then
  echo "${who}: pip installed $facts, not narwhal-inference ${o.source.version}" >&2
  keep_attempt "$folder/${ATTEMPTS_DIR}" "$attempt_started" 0 "pip installed $facts, not narwhal-inference ${o.source.version}" ${shq(pipCommand)} "$folder/${INSTALL_LOG}"
  rm -rf "$venv"
  exit 1
fi
`
    : ""
}list_attempts "$folder/${ATTEMPTS_DIR}" ${INSTALL_LOG}
printf '%s' "$facts" | "$venv/bin/python" -c 'import json,sys,datetime; f=json.load(sys.stdin); print(json.dumps({"revision": sys.argv[1], "version": f["version"], "digest": f["digest"], "python": f["python"], "binDir": sys.argv[2], "installedAt": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}))' ${shq(revision)} "$venv/bin" > "$marker.tmp"
mv -f "$marker.tmp" "$marker"
cat "$marker"
`;
}

/**
 * Removes what the install made in the revision's folder (venv, marker, pip log) and the folder once
 * nothing else is in it; failed attempts kept there stay (they go with the stack's folder on the host).
 * The other revisions stay.
 */
export function uninstallScript(o: Pick<InstallOptions, "installDir" | "source">): string {
  const folder = shq(revisionDir(o));
  return `set -eu
rm -rf ${folder}/venv ${folder}/install.json ${folder}/install.json.tmp ${folder}/${INSTALL_LOG}
rmdir ${folder} 2>/dev/null || true
`;
}

/** The parts of an install, relative to its revision's folder, whose absence means it is gone. */
export const INSTALL_PARTS: ReadonlyArray<{ part: string; executable: boolean }> = [
  { part: "install.json", executable: false },
  { part: "venv/bin/python", executable: true },
  { part: "venv/bin/narwhal-serve", executable: true },
  { part: "venv/bin/narwhal-attest", executable: true },
];

/** Where each part of the install is on its host (lib/host-paths.ts looks for them at refresh). */
export function installPaths(o: Pick<InstallOptions, "installDir" | "source">): ExpectedPath[] {
  const folder = revisionDir(o);
  return INSTALL_PARTS.map(({ part, executable }) => ({ path: `${folder}/${part}`, executable }));
}
