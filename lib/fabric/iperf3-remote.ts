/**
 * The shell around one measurement on the edge's two hosts, for iperf3 (TCP edges) and perftest's
 * `ib_write_bw` (RDMA edges): check that nothing else is using the hosts' fabric tools, start the server
 * on the destination (bounded, detached from the SSH channel, in its own process group), and stop it
 * afterwards whatever happened, proving nothing is left listening.
 *
 * "Running the tool" is judged by sockets in the host's network namespace (`ss -p`), not by the process
 * table: hosts that share a kernel (containers, the simulated fleet) would otherwise see each other's runs.
 */
import { shellLine, shq } from "../shell";
import { FabricError, type FabricErrorCode } from "./errors";
import type { Iperf3Commands } from "./iperf3";

/** Seconds between TERM and KILL when `timeout` ends a tool. */
export const KILL_GRACE_S = 5;
/** Seconds the server may take to listen once started. */
export const SERVER_READY_TIMEOUT_S = 10;
/** Seconds beyond the test's own duration the client may take (connect, omit, the final exchange). */
export const CLIENT_SLACK_S = 20;

/** Seconds the server may live: it serves exactly one test, then exits on its own (`-1`). */
export function serverLifetimeS(durationS: number): number {
  return SERVER_READY_TIMEOUT_S + durationS + CLIENT_SLACK_S + KILL_GRACE_S;
}

/** Seconds the client command may run before `timeout` ends it. */
export function clientLifetimeS(durationS: number): number {
  return durationS + CLIENT_SLACK_S;
}

/**
 * Seconds an edge waits for another edge's measurement before refusing: two whole server lifetimes and
 * a minute for the logins and observations around them.
 */
export function edgeLockWaitS(durationS: number): number {
  return 2 * serverLifetimeS(durationS) + 60;
}

/**
 * Seconds an ib_write_bw client may run: perftest's defaults move 328 MB, under 3 s at 1 Gbit/s; a broken
 * RDMA path fails after (retry count + 1) × QP timeout, about half a second.
 */
export const IB_WRITE_BW_CLIENT_TIMEOUT_S = 60;

/** Seconds an ib_write_bw server may live: listen, serve the one client, exit. */
export function ibWriteBwServerLifetimeS(): number {
  return SERVER_READY_TIMEOUT_S + IB_WRITE_BW_CLIENT_TIMEOUT_S + KILL_GRACE_S;
}

/** Seconds an RDMA edge waits for another edge's measurement before refusing. */
export function rdmaLockWaitS(): number {
  return 2 * ibWriteBwServerLifetimeS() + 60;
}

/** The tools a measurement runs, by the name `ss -p` shows for their sockets. */
export type FabricTool = "iperf3" | "ib_write_bw";

/** Exit statuses the scripts use, so the provider can name what was busy. */
export const BUSY_IPERF3 = 75;
export const BUSY_PORT = 76;
export const NO_IPERF3 = 77;
/** The tool is on PATH but the login cannot execute it (its mode, or a noexec mount): not "not installed". */
export const TOOL_NOT_EXECUTABLE = 78;

/**
 * Finds the tool as the shell would run it; when there is none, looks along PATH for a file of that name
 * the login cannot execute, so a tool that lost its mode is named by path instead of called absent.
 * dash's `command -v` skips such a file, bash's prints it: neither tells the two apart on its own.
 */
function toolFoundScript(tool: FabricTool): string[] {
  return [
    `found=$(command -v ${tool} 2>/dev/null) || found=`,
    'if [ -z "$found" ] || [ -d "$found" ] || [ ! -x "$found" ]; then',
    "  found=; set -f; IFS=:",
    `  for d in $PATH; do if [ -e "\${d:-.}/${tool}" ]; then found="\${d:-.}/${tool}"; break; fi; done`,
    "  unset IFS; set +f",
    `  [ -z "$found" ] || { printf '${tool} is at %s but this login (%s) cannot execute it: %s\\n' "$found" "$(id -un 2>/dev/null)" "$(ls -ld "$found" 2>&1)"; exit ${TOOL_NOT_EXECUTABLE}; }`,
    `  echo "${tool} is not installed (not on PATH: $PATH)"; exit ${NO_IPERF3}`,
    "fi",
  ];
}

/**
 * Run on both hosts before anything starts: the tool installed and executable, no socket of it open on
 * the host, and (on the destination) nothing listening on the port. Prints what it found when it refuses.
 */
export function preflightScript(port: number | null, tool: FabricTool = "iperf3"): string {
  return [
    ...toolFoundScript(tool),
    `busy=$(ss -Htanp 2>/dev/null | grep '"${tool}"'); [ -z "$busy" ] || { printf '${tool} is already running here:\\n%s\\n' "$busy"; exit ${BUSY_IPERF3}; }`,
    ...(port === null ? [] : [`taken=$(ss -Hltnp ${shq(`sport = :${port}`)} 2>/dev/null); [ -z "$taken" ] || { printf 'port ${port} is taken:\\n%s\\n' "$taken"; exit ${BUSY_PORT}; }`]),
    "exit 0",
  ].join("\n") + "\n";
}

/** Why {@link preflightScript} refused, from its exit status and output, with what to do. */
export interface PreflightRefusal {
  code: FabricErrorCode;
  message: string;
}

/** The path a {@link TOOL_NOT_EXECUTABLE} refusal named, or null when its output is not that line. */
export function unexecutablePath(tool: FabricTool, output: string): string | null {
  const m = new RegExp(`^${tool} is at (.+?) but this login \\(`, "m").exec(output);
  return m ? m[1] : null;
}

/** Reads a failed preflight: the tool absent, present but not executable, busy, the port taken, or else. */
export function preflightRefusal(tool: FabricTool, r: { code: number; stdout: string; stderr: string }, portKey: string): PreflightRefusal {
  const what = r.stdout.trim() || r.stderr.trim();
  const install = tool === "iperf3" ? "iperf3" : "perftest (ib_write_bw)";
  if (r.code === NO_IPERF3) return { code: "NARWHAL_FABRIC_TOOL_MISSING", message: `${what}; install ${install} on every engine host` };
  if (r.code === TOOL_NOT_EXECUTABLE) {
    const at = unexecutablePath(tool, r.stdout);
    const chmod = at ? ` (\`chmod 755 ${shq(at)}\`; on a noexec mount, install it elsewhere)` : "";
    return { code: "NARWHAL_FABRIC_TOOL_MISSING", message: `${what}; it is installed but not executable: make it executable for this login${chmod} or reinstall ${install}` };
  }
  if (r.code === BUSY_IPERF3) {
    return { code: "NARWHAL_FABRIC_BUSY", message: `${what}; another measurement or test traffic is running there, and the mesh is measured one edge at a time while idle` };
  }
  if (r.code === BUSY_PORT) return { code: "NARWHAL_FABRIC_BUSY", message: `${what}; choose another ${portKey} or stop that listener` };
  return { code: "NARWHAL_FABRIC_BUSY", message: `the fabric preflight exited ${r.code}: ${what}` };
}

/** The folder each measurement keeps its server's pid and log in, on the destination. */
export const RUN_DIR_TEMPLATE = "/tmp/narwhal-fabric.XXXXXXXX";
const RUN_DIR = /^\/tmp\/narwhal-fabric\.[A-Za-z0-9]{8}$/;

/**
 * Starts `commands.server` on the destination and waits until it listens; prints the run folder on its
 * first line. Exits non-zero with the server's log when it does not listen in time.
 */
export function serverStartScript(commands: Iperf3Commands): string {
  const { port, durationS } = commands.settings;
  return detachedServerStartScript({ tool: "iperf3", argv: commands.server, port, lifetimeS: serverLifetimeS(durationS) });
}

/** A server to run detached on the destination: its argv, the TCP port it listens on, and how long it may live. */
export interface DetachedServer {
  readonly tool: FabricTool;
  readonly argv: ReadonlyArray<string>;
  readonly port: number;
  readonly lifetimeS: number;
}

/** {@link serverStartScript} for any tool. */
export function detachedServerStartScript(server: DetachedServer): string {
  const { tool, port } = server;
  const argv = boundedArgv(server.argv, server.lifetimeS);
  const polls = SERVER_READY_TIMEOUT_S * 10;
  return [
    `dir=$(mktemp -d ${RUN_DIR_TEMPLATE}) || exit 70`,
    'echo "$dir"',
    // Its own session: the stop script ends the whole group; no descriptor ties it to this SSH channel.
    `setsid ${shellLine(argv)} >"$dir/server.log" 2>&1 </dev/null &`,
    'pid=$!; echo "$pid" >"$dir/server.pid"',
    "i=0",
    `while [ "$i" -lt ${polls} ]; do`,
    `  [ -n "$(ss -Hltn ${shq(`sport = :${port}`)} 2>/dev/null)" ] && exit 0`,
    `  kill -0 "$pid" 2>/dev/null || { echo "the ${tool} server exited before listening:" >&2; cat "$dir/server.log" >&2; exit 71; }`,
    "  sleep 0.1; i=$((i + 1))",
    "done",
    `echo "the ${tool} server did not listen on port ${port} within SERVER_READY_TIMEOUT_S=${SERVER_READY_TIMEOUT_S}s:" >&2; cat "$dir/server.log" >&2; exit 72`,
  ].join("\n") + "\n";
}

/** The run folder {@link serverStartScript} printed; throws when its first line is not one. */
export function runDirOf(host: string, startOutput: string, tool: FabricTool = "iperf3"): string {
  const dir = startOutput.split("\n")[0].trim();
  if (!RUN_DIR.test(dir)) throw new FabricError("NARWHAL_FABRIC_TOOL_OUTPUT", `host ${host}: the ${tool} server start printed no run folder: ${JSON.stringify(startOutput.slice(0, 200))}`);
  return dir;
}

/** The marker between what the stop script says and the server's log. */
export const SERVER_LOG_MARK = "@@narwhal-fabric-server-log";

/**
 * Ends the server's process group if it is still there (TERM, then KILL), prints its log after
 * {@link SERVER_LOG_MARK}, removes the run folder, and fails when anything still listens on the port.
 */
export function serverStopScript(dir: string, port: number, tool: FabricTool = "iperf3"): string {
  if (!RUN_DIR.test(dir)) throw new FabricError("NARWHAL_FABRIC_TOOL_SETTINGS", `not a measurement run folder: ${JSON.stringify(dir)}`);
  const d = shq(dir);
  return [
    `pid=$(cat ${d}/server.pid 2>/dev/null)`,
    // Only a group whose leader is still our server: a recycled pid is someone else's process.
    `if [ -n "$pid" ] && tr "\\0" " " </proc/"$pid"/cmdline 2>/dev/null | grep -q ${tool}; then`,
    '  kill -TERM -- "-$pid" 2>/dev/null',
    "  i=0",
    `  while kill -0 "$pid" 2>/dev/null && [ "$i" -lt ${KILL_GRACE_S * 10} ]; do sleep 0.1; i=$((i + 1)); done`,
    '  kill -KILL -- "-$pid" 2>/dev/null',
    "fi",
    `echo ${SERVER_LOG_MARK}`,
    `cat ${d}/server.log 2>/dev/null`,
    `rm -rf ${d}`,
    `left=$(ss -Hltnp ${shq(`sport = :${port}`)} 2>/dev/null | grep '"${tool}"')`,
    `[ -z "$left" ] || { printf 'an ${tool} server still listens on port ${port}:\\n%s\\n' "$left" >&2; exit 73; }`,
    "exit 0",
  ].join("\n") + "\n";
}

/** A tool's argv run under `timeout`: TERM after `lifetimeS`, KILL after the grace. */
export function boundedArgv(argv: ReadonlyArray<string>, lifetimeS: number): string[] {
  return ["timeout", "-k", String(KILL_GRACE_S), String(lifetimeS), ...argv];
}
