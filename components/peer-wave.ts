/**
 * `runtime.restartKvPeers`: one PeerWave per KV component, between the engines' runtimes and their
 * generations. The generations are built before the waves (each engine is one component), so the wave
 * and the peers' identities reach them through deferred outputs: the graph stays runtime -> wave ->
 * generation, without a cycle between engines that are each other's peers.
 */
import * as pulumi from "@pulumi/pulumi";
import type * as command from "@pulumi/command";
import type { FleetSpec } from "../lib/config/types";
import { kvComponents } from "../lib/fleet/kv-components";
import { restartScope, type RestartScope } from "../lib/engine/restart-scope";
import { loginInputs, loginSecrets } from "./login-inputs";
import { PeerWave } from "../dynamic-providers/peer-wave/resource";
import type { Engine, EngineArgs, KvPeer } from "./engine";
import type { ProcessIdentity } from "./runtime";

/** Slack beyond the stop and start deadlines for one member's restart over SSH. */
const RESTART_MARGIN_S = 30;

export interface KvPeerWiring {
  /** What an engine's generation needs: its peers and the wave of its component; undefined outside any component. */
  argsFor(engineId: string): EngineArgs["kvPeers"];
  /** Each KV component's engines and who restarts with one of them, and why (the stack's `restarts` output). */
  readonly scopes: pulumi.Output<Array<{ engines: string[] } & RestartScope>>;
  /** Creates the waves once every engine exists. */
  connect(engines: ReadonlyArray<{ id: string; host: string; engine: Engine }>, connectionOf: (host: string) => pulumi.Input<command.types.input.remote.ConnectionArgs>): PeerWave[];
}

export function kvPeerWiring(name: string, spec: FleetSpec, engineApiKey: pulumi.Input<string>, parent: pulumi.Resource): KvPeerWiring {
  const components = kvComponents(spec.engines.map((e) => ({ id: e.id, role: e.role, pin: e.pin })));
  // One deferred output per field of each engine, not one for them all: a preview that cannot know one
  // engine's identity yet (its start only runs again) leaves its key and every other peer known.
  const deferred = new Map(
    spec.engines.map((e) => [e.id, { url: pulumi.deferredOutput<string>(), processIdentity: pulumi.deferredOutput<ProcessIdentity>(), processStartKey: pulumi.deferredOutput<string | undefined>() }]),
  );
  const peerOf = (id: string): KvPeer => {
    const d = deferred.get(id)!;
    return { url: d.url[0], processIdentity: d.processIdentity[0], processStartKey: d.processStartKey[0] };
  };
  const waves = components.map(() => pulumi.deferredOutput<pulumi.Resource[]>());
  // Each component's restart scope, from its members' image checks (their NIXL) and plans, known once
  // every engine exists.
  const scopes = components.map(() => pulumi.deferredOutput<RestartScope>());
  const componentOf = new Map(components.flatMap((c, i) => c.map((id) => [id, i] as const)));

  return {
    scopes: pulumi.all(scopes.map((s, i) => s[0].apply((scope) => ({ engines: components[i], ...scope })))),

    argsFor(engineId) {
      const c = componentOf.get(engineId);
      if (c === undefined) return undefined;
      const others = components[c].filter((id) => id !== engineId);
      const peers = Object.fromEntries(others.map((id) => [id, peerOf(id)]));
      // Where only a restarted engine restarts, its readers' proofs stand: they are bound to no peer.
      return { peers: scopes[c][0].apply((scope) => (scope.kind === "component" ? peers : undefined)), wave: waves[c][0] };
    },

    connect(engines, connectionOf) {
      const byId = new Map(engines.map((e) => [e.id, e]));
      for (const { id, engine } of engines) {
        const d = deferred.get(id)!;
        d.url[1](engine.url);
        d.processIdentity[1](engine.identity);
        d.processStartKey[1](engine.startKey ?? pulumi.output(undefined));
      }
      return components.map((ids, i) => {
        const logins = new Map(ids.map((id) => byId.get(id)!.host).map((host) => [host, loginInputs(connectionOf(host))]));
        const scope = pulumi
          .all(ids.map((id) => pulumi.all([byId.get(id)!.engine.imageCheck.findings, byId.get(id)!.engine.plan]).apply(([findings, plan]) => ({ engineId: id, nixlVersion: findings?.nixl?.version ?? null, argv: plan.argv }))))
          .apply(restartScope);
        scopes[i][1](scope);
        const wave = new PeerWave(
          `${name}-kv-wave-${i + 1}`,
          {
            members: pulumi.all(ids.map((id) => {
              const { host, engine } = byId.get(id)!;
              return pulumi.all([engine.url, engine.identity, engine.restartScript, logins.get(host)!.login]).apply(([url, processIdentity, restartScript, login]) => ({
                engineId: id,
                hostAlias: host,
                url,
                processIdentity,
                restartScript,
                login,
              }));
            })),
            credentials: pulumi.secret(
              pulumi.all(Object.fromEntries([...logins].map(([host, l]) => [host, loginSecrets(l)]))),
            ),
            apiKey: engineApiKey,
            restartTimeoutS: spec.runtime.deadlinesS.stop + spec.runtime.deadlinesS.start + RESTART_MARGIN_S,
            scope,
          },
          { parent },
        );
        waves[i][1](pulumi.output([wave]));
        return wave;
      });
    },
  };
}
