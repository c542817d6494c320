/**
 * "Exactly one controller is active for the fleet", checked on every fleet host before the router starts
 * (or is swapped): a Narwhal router of another stack, or one started by hand, that already serves any of
 * this fleet's engines stops the run in one line naming the host, its port, pid and command line.
 *
 * What a narwhal-serve 0.7.0 does to its engines decides what is looked at. It polls each engine every
 * `controller.monitor_interval_s` (1 s by default) on a keep-alive control client whose idle connections
 * live 4 s (narwhal/engines/client.py, dialect `keepalive_expiry_s`), so a serving router holds an
 * established TCP connection to every engine's port; and it lists the engines it serves, unauthenticated,
 * at `GET /narwhal/targets` (narwhal/observability/targets.py, `host:port` of each engine URL). Its own
 * lease (`--lease-path`, narwhal/runtime/lease.py) fences a primary and its standby sharing one file; two
 * independent routers share none, so the lease cannot see them.
 *
 * So, on each host:
 * - every `narwhal-serve` process of this host (its network namespace; one this login cannot inspect
 *   counts as this host's) other than this stack's router (its working folder is this stack's router
 *   folder) is asked for `/narwhal/targets` on its `--host`/`--port`; when it does not answer (starting,
 *   standby), its `--fleet` document is read instead. Naming any of this fleet's engines is a refusal.
 * - on an engine's host, each established connection to the engine's port whose other end is on this
 *   host is traced to its process (`ss -p`): a `narwhal-serve` that is not this stack's is a refusal
 *   (it serves the engine, whatever its targets say).
 * - a connection from an address that is no fleet host's is named on stderr, not refused: from the
 *   engine's side a router on a foreign host cannot be told from a scraper (both keep a connection open).
 */
import { shq } from "../shell";

export interface ControllerCheckOptions {
  /** The host's alias in the fleet config, named by a refusal. */
  readonly hostAlias: string;
  /** This stack's router folder on this host: a narwhal-serve working there is this stack's own router. */
  readonly ownRouterDir: string;
  /** Every engine of the fleet as `host:port` (its URL's authority), as `/narwhal/targets` lists it. */
  readonly engineAddresses: readonly string[];
  /** The ports of the fleet's engines on this host, each with its engine id. */
  readonly localEngines: ReadonlyArray<{ readonly id: string; readonly port: number }>;
  /** Every fleet host's addresses: connections from them are that host's own check to judge. */
  readonly fleetAddresses: readonly string[];
}

/** The authority (`host:port`) of an engine URL, as narwhal's `/narwhal/targets` prints it (userinfo dropped). */
export function engineAddressOf(url: string): string {
  const m = /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)/i.exec(url);
  if (!m || m[1] === "") throw new Error(`router: engine URL ${JSON.stringify(url)} has no host`);
  return m[1].slice(m[1].lastIndexOf("@") + 1);
}

/** The TCP port of an engine URL (its explicit port, else the scheme's default). */
export function enginePortOf(url: string): number {
  const authority = engineAddressOf(url);
  const m = /:(\d+)$/.exec(authority.replace(/^\[[^\]]*\]/, ""));
  if (m) return Number(m[1]);
  return /^https:/i.test(url) ? 443 : 80;
}

/** This fleet's engines as the fleet document lists them: id and URL. */
export function documentEngines(document: Record<string, unknown>): Array<{ id: string; url: string }> {
  const engines = (document.engines as Array<{ iid?: unknown; id?: unknown; url?: unknown }> | undefined) ?? [];
  return engines.map((e, i) => {
    if (typeof e.url !== "string") throw new Error(`router: the fleet document's engines[${i}].url is missing`);
    return { id: String(e.iid ?? e.id ?? i), url: e.url };
  });
}

export interface ControllerConflict {
  readonly engines: string;
  readonly hostAlias: string;
  readonly port: string;
  readonly pid: string;
  readonly command: string;
}

/** The refusal: one line naming the engines served, the host, the router's port, pid and command line, and the fix. */
export function controllerConflictMessage(c: ControllerConflict): string {
  return (
    `router: another Narwhal router already serves this fleet's engine(s) ${c.engines}: host ${c.hostAlias}, port ${c.port}, pid ${c.pid} (${c.command}); ` +
    `exactly one controller may be active for a fleet: stop that router (pulumi destroy on the stack that started it, or stop pid ${c.pid} on ${c.hostAlias}), then run pulumi up again`
  );
}

/** The refusal as a printf format: engines, host, port, pid, command, pid, host. */
const CONFLICT_FORMAT = controllerConflictMessage({ engines: "%s", hostAlias: "%s", port: "%s", pid: "%s", command: "%s" });

/**
 * The check's script (POSIX sh). Prints one JSON line when no other router serves the fleet's engines:
 * `{"host","routers":[pids seen and judged],"unexamined":[pids neither answering nor readable],"foreignPeers":[…]}`.
 */
export function controllerCheckScript(o: ControllerCheckOptions): string {
  return `set -u
ours=${shq(o.ownRouterDir)}
engines=${shq(o.engineAddresses.join(" "))}
local_engines=${shq(o.localEngines.map((e) => `${e.id}:${e.port}`).join(" "))}
fleet_addrs=${shq(o.fleetAddresses.join(" "))}
self_net=$(readlink /proc/self/ns/net 2>/dev/null || true)
# argv[0] or argv[1] (a console script runs as "python narwhal-serve …") is narwhal-serve.
is_router() { { tr '\\000' '\\n' < "/proc/$1/cmdline"; } 2>/dev/null | head -n 2 | grep -q '\\(^\\|/\\)narwhal-serve$'; }
arg_of() { { tr '\\000' '\\n' < "/proc/$1/cmdline"; } 2>/dev/null | awk -v f="$2" -v d="$3" 'p { print; found = 1; exit } $0 == f { p = 1 } index($0, f "=") == 1 { print substr($0, length(f) + 2); found = 1; exit } END { if (!found) print d }'; }
cmd_of() { { tr '\\000' ' ' < "/proc/$1/cmdline"; } 2>/dev/null | cut -c1-200 | sed 's/ *$//'; }
is_ours() { [ "$(readlink "/proc/$1/cwd" 2>/dev/null)" = "$ours" ]; }
# Another network namespace is another host (a simulated one) or a container this login can inspect.
on_this_host() { n=$(readlink "/proc/$1/ns/net" 2>/dev/null || true); [ -z "$n" ] || [ -z "$self_net" ] || [ "$n" = "$self_net" ]; }
refuse() { printf ${shq(CONFLICT_FORMAT + "\\n")} "$3" ${shq(o.hostAlias)} "$2" "$1" "$(cmd_of "$1")" "$1" ${shq(o.hostAlias)} >&2; exit 1; }
routers=""; unexamined=""; peers=""
for pid in $(ls /proc 2>/dev/null | grep '^[0-9][0-9]*$'); do
  is_router "$pid" || continue
  on_this_host "$pid" || continue
  is_ours "$pid" && continue
  bind=$(arg_of "$pid" --host 127.0.0.1); port=$(arg_of "$pid" --port 8000)
  case "$bind" in 0.0.0.0|'') addr=127.0.0.1 ;; ::) addr='[::1]' ;; *:*) addr="[$bind]" ;; *) addr=$bind ;; esac
  body=$(curl -sS --max-time 3 "http://$addr:$port/narwhal/targets" 2>/dev/null || true)
  case "$body" in '['*) ;; *)
    fleet=$(arg_of "$pid" --fleet "")
    case "$fleet" in /*|'') ;; *) fleet="$(readlink "/proc/$pid/cwd" 2>/dev/null)/$fleet" ;; esac
    body=$(cat "$fleet" 2>/dev/null || true) ;;
  esac
  if [ -z "$body" ]; then unexamined="$unexamined,$pid"; continue; fi
  routers="$routers,$pid"
  served=""
  for e in $engines; do
    case "$body" in *"\\"$e\\""*|*"//$e\\""*|*"//$e/"*|*"@$e\\""*|*"@$e/"*) served="$served\${served:+, }$e" ;; esac
  done
  [ -n "$served" ] && refuse "$pid" "$port" "$served"
done
if command -v ss >/dev/null 2>&1; then
  for le in $local_engines; do
    eport=\${le##*:}
    for peer in $(ss -Htn state established "( sport = :$eport )" 2>/dev/null | awk '{ print $4 }'); do
      pport=\${peer##*:}; paddr=\${peer%:*}; paddr=\${paddr#[}; paddr=\${paddr%]}; paddr=\${paddr#::ffff:}
      pid=$(ss -Htnp state established "( sport = :$pport and dport = :$eport )" 2>/dev/null | sed -n 's/.*users:(("[^"]*",pid=\\([0-9][0-9]*\\).*/\\1/p' | head -n 1)
      if [ -n "$pid" ]; then
        if is_router "$pid" && ! is_ours "$pid"; then refuse "$pid" "$(arg_of "$pid" --port 8000)" "\${le%:*} (its connection to port $eport)"; fi
        continue
      fi
      # The other end is on another host (or a process this login cannot name).
      known=""
      for a in $fleet_addrs 127.0.0.1 ::1; do [ "$a" = "$paddr" ] && known=1; done
      if [ -z "$known" ] && ! ip -o addr show 2>/dev/null | grep -q "inet6\\? $paddr/"; then
        case ",$peers," in *",$paddr:$eport,"*) ;; *) peers="$peers,$paddr:$eport" ;; esac
        printf 'router: note: engine %s on host %s has a connection from %s, no fleet host: if a Narwhal router runs there, stop it (exactly one controller may be active for a fleet)\\n' "\${le%:*}" ${shq(o.hostAlias)} "$paddr" >&2
      fi
    done
  done
fi
json_list() { printf '%s' "$1" | sed 's/^,//; s/\\([^,][^,]*\\)/"\\1"/g'; }
printf '{"host":"%s","routers":[%s],"unexamined":[%s],"foreignPeers":[%s]}\\n' ${shq(o.hostAlias)} "$(printf '%s' "$routers" | sed 's/^,//')" "$(printf '%s' "$unexamined" | sed 's/^,//')" "$(json_list "$peers")"
`;
}
