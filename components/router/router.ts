import * as pulumi from "@pulumi/pulumi";
import * as command from "@pulumi/command";
import { OpaqueComponent } from "../opaque-component";
import { envFile } from "../../lib/shell";
import { ENGINE_API_KEY_ENV } from "../../lib/fleet/fleet-document";
import { localAddress, profileStorePath, routerIdentity, routerPortCheckScript, routerStartScript, routerStopScript, routerSwapScript, routerUrl, textDigest, type RouterOptions, type RouterStarted } from "../../lib/router/serve";
import { controllerCheckScript, documentEngines, engineAddressOf, enginePortOf } from "../../lib/router/controller-check";
import { judgeRouterProof, proofScript, type RouterProof } from "../../lib/router/proof";
import type { NarwhalInstall } from "./install";
import { lastJsonLine } from "../../lib/json-line";
import { startKeyOf } from "../runtime/start-key";
import { Liveness } from "../../dynamic-providers/liveness/resource";
import { frontStartScript, frontStopScript } from "../../lib/router/front";

export interface RouterArgs {
  connection: command.types.input.remote.ConnectionArgs;
  /** The router host's alias: a port refusal names it. */
  hostAlias?: string;
  /** Gate B on this host: the router runs from its bin folder and is replaced with it. */
  install: NarwhalInstall;
  /** The `narwhal.fleet` document the router loads. */
  fleetDocument: pulumi.Input<Record<string, unknown>>;
  /** The profile store (Gate F), written where the document's `profiles.path` points. */
  profileStore?: pulumi.Input<string>;
  /** Or: the digest of a store Gate F already wrote there; a new one restarts the router. */
  profileStoreDigest?: pulumi.Input<string>;
  engineApiKey: pulumi.Input<string>;
  /** The last gate before the router: it never starts before that resource succeeded. */
  after: pulumi.Input<pulumi.Resource>;
  runDir: string;
  bindAddress: string;
  port: number;
  /** narwhal-serve's own port on loopback, behind the front on `port` (`router.backendPort`). */
  backendPort: number;
  /** An address of the router host that clients reach (its URL in the stack outputs). */
  address: pulumi.Input<string>;
  model: string;
  engineIds: readonly string[];
  startTimeoutS: number;
  stopTimeoutS: number;
  /** A refresh's `/health` probe of the router waits this long before it calls the router hung. */
  healthDeadlineS: number;
  /** Every fleet host, where the one-controller check looks for another router serving these engines. */
  fleetHosts?: readonly FleetHostForCheck[];
}

export interface FleetHostForCheck {
  alias: string;
  connection: command.types.input.remote.ConnectionArgs;
  /** This stack's router folder on that host (where its router would work, were it the router host). */
  routerDir: string;
  /** The ids of the engines that run on this host. */
  engineIds: readonly string[];
  /** The host's addresses (fabric, login): a connection from one is that host's own check to judge. */
  addresses: readonly pulumi.Input<string>[];
}

/** A router bound to loopback answers only on its host: the program cannot probe it, so it has no liveness. */
export function probeableBind(bindAddress: string): boolean {
  return !/^(127\.|::1$|localhost$)/.test(bindAddress);
}

/**
 * Gate G: `narwhal-serve` on the router host, started after the last gate and proved: `/health` ready
 * with every engine, the served model listed, one completion through a prefill and a decode engine.
 * Clients reach it through its front (lib/router/front.ts) on the router port, which holds their requests
 * while the router behind it is swapped. The router swaps in place (an update: hold, stop, start,
 * release) when its document, profile store or install changes, once everything before it succeeded;
 * until then the serving router keeps serving. A start interrupted after launching is adopted by the
 * next one; a restarted router re-matches the saved profiles against the live engines itself.
 */
export class Router extends OpaqueComponent {
  public readonly url: pulumi.Output<string>;
  public readonly started: pulumi.Output<RouterStarted>;
  public readonly proof: pulumi.Output<RouterProof>;
  public readonly documentDigest: pulumi.Output<string>;
  public readonly profileStoreDigest: pulumi.Output<string | undefined>;
  /** What the router serves, as its folder records it (`identity`): the freshness exporter compares it. */
  public readonly identity: pulumi.Output<string>;
  /** The profile store's path on the router host, where the document's `profiles.path` points. */
  public readonly profileStorePath: pulumi.Output<string>;
  public readonly process: command.remote.Command;
  /** The front on the router port: replaced only when its port, backend or code changes. */
  public readonly front: command.remote.Command;
  /** The one-controller check on each fleet host, run before the router starts. */
  public readonly controllerChecks: command.remote.Command[];
  /** The proof's command: one completion through the router, its health and models. */
  public readonly proofCommand: command.remote.Command;
  /** Whether the router still serves, as a refresh sees it: a new epoch starts it again (none for a loopback bind). */
  public readonly liveness?: Liveness;

  constructor(name: string, args: RouterArgs, opts?: pulumi.ComponentResourceOptions) {
    super("narwhal:router:Router", name, {}, opts);
    const text = pulumi.output(args.fleetDocument).apply((d) => JSON.stringify(d, null, 2));
    const store = args.profileStore === undefined ? pulumi.output<string | undefined>(undefined) : pulumi.output(args.profileStore);
    this.profileStoreDigest =
      args.profileStoreDigest !== undefined ? pulumi.output(args.profileStoreDigest) : store.apply((s) => (s === undefined ? undefined : textDigest(s)));
    this.documentDigest = text.apply(textDigest);
    this.url = pulumi.output(args.address).apply((a) => routerUrl(a, args.port));
    this.profileStorePath = text.apply((doc) => `${args.runDir}/${profileStorePath(JSON.parse(doc) as Record<string, unknown>)}`);
    // The install stands for its marker by its start key: a preview cannot know what a re-run install prints,
    // but knows whether the install is replaced, which is when the router would start from a new one.
    const inputTriggers = [this.documentDigest, this.profileStoreDigest.apply((d) => d ?? "none"), startKeyOf(args.install.command), `${args.bindAddress}:${args.port}`];
    // Runs whenever the router is about to start on new inputs: a port held by someone else stops the run
    // here, before the serving router is stopped for the swap. A restart for a new liveness epoch does not
    // run it: the router was found down, so nothing serves to be kept, and the start script refuses a taken
    // port itself.
    const portCheck = new command.remote.Command(
      `${name}-port-check`,
      { connection: args.connection, create: routerPortCheckScript({ runDir: args.runDir, port: args.port, hostAlias: args.hostAlias }), triggers: inputTriggers, addPreviousOutputInEnv: false, logging: "stderr" },
      { parent: this, dependsOn: [args.after, args.install.ready] },
    );
    if (probeableBind(args.bindAddress)) {
      this.liveness = new Liveness(
        `${name}-liveness`,
        { service: "router", name: "router", hostAlias: args.hostAlias ?? "router", url: this.url, healthDeadlineS: args.healthDeadlineS },
        // Probes the port the router serves: it takes a new port only once the port check let the router
        // move there. A refused port change leaves it on the port the old router keeps serving, so the next
        // refresh does not call the serving router down and restart it.
        { parent: this, dependsOn: [portCheck] },
      );
    }
    const epoch = this.liveness?.epoch ?? pulumi.output<string | undefined>(undefined);
    const triggers = [...inputTriggers, epoch.apply((e) => e ?? "none")];
    const options: pulumi.Output<RouterOptions> = pulumi.all([text, store, args.install.marker, this.profileStoreDigest, epoch]).apply(([fleetDocument, profileStore, marker, profileStoreDigest, restartEpoch]) => ({
      runDir: args.runDir,
      binDir: marker.binDir,
      bindAddress: args.bindAddress,
      port: args.port,
      backendPort: args.backendPort,
      fleetDocument,
      profileStore,
      profileStoreDigest,
      startTimeoutS: args.startTimeoutS,
      stopTimeoutS: args.stopTimeoutS,
      hostAlias: args.hostAlias,
      ...(restartEpoch === undefined ? {} : { restartEpoch }),
    }));
    this.identity = options.apply(routerIdentity);
    // Exactly one controller per fleet: on every fleet host, no other narwhal-serve may serve these engines.
    // Runs with the port check, before the serving router is stopped for a swap.
    const allAddresses = pulumi.all((args.fleetHosts ?? []).flatMap((h) => h.addresses.map((a) => pulumi.output(a))));
    const controllerChecks = (this.controllerChecks = (args.fleetHosts ?? []).map(
      (h) =>
        new command.remote.Command(
          `${name}-controller-check-${h.alias}`,
          {
            connection: h.connection,
            create: pulumi.all([text, allAddresses]).apply(([doc, addresses]) => {
              const engines = documentEngines(JSON.parse(doc) as Record<string, unknown>);
              return controllerCheckScript({
                hostAlias: h.alias,
                ownRouterDir: h.routerDir,
                engineAddresses: engines.map((e) => engineAddressOf(e.url)),
                localEngines: engines.filter((e) => h.engineIds.includes(e.id)).map((e) => ({ id: e.id, port: enginePortOf(e.url) })),
                fleetAddresses: [...new Set(addresses)],
              });
            }),
            triggers,
            addPreviousOutputInEnv: false,
            logging: "stderr",
          },
          { parent: this, dependsOn: [args.after, args.install.ready] },
        ),
    ));
    const front = (this.front = new command.remote.Command(
      `${name}-front`,
      {
        connection: args.connection,
        create: pulumi.all([args.install.marker, epoch]).apply(([marker, restartEpoch]) =>
          frontStartScript({
            routerDir: args.runDir,
            binDir: marker.binDir,
            bindAddress: args.bindAddress,
            port: args.port,
            backendPort: args.backendPort,
            startTimeoutS: args.startTimeoutS,
            stopTimeoutS: args.stopTimeoutS,
            hostAlias: args.hostAlias,
            ...(restartEpoch === undefined ? {} : { restartEpoch }),
          }),
        ),
        delete: frontStopScript({ routerDir: args.runDir, stopTimeoutS: args.stopTimeoutS }),
        addPreviousOutputInEnv: false,
        logging: "stderr",
      },
      // After the port check: a port held by another process stops the run before anything is touched. Its
      // start runs again (an update: it keeps a running front) when a refresh found the router's URL down.
      { parent: this, dependsOn: [args.after, args.install.ready, portCheck] },
    ));
    // A new document or store is an update that swaps the router in place (stop, then start), run once the
    // preflight that judged them passed. A replacement would be deleted at the start of every up that
    // restarts an engine (the engine's process is deleted before its replacement, and with it whatever
    // would be replaced after it), so nothing would serve while the engines recover, or after a failed up.
    this.process = new command.remote.Command(
      `${name}-process`,
      {
        connection: args.connection,
        create: options.apply(routerStartScript),
        update: options.apply(routerSwapScript),
        delete: options.apply(routerStopScript),
        stdin: pulumi.secret(pulumi.output(args.engineApiKey).apply((key) => envFile({ [ENGINE_API_KEY_ENV]: key }))),
        addPreviousOutputInEnv: false,
        logging: "stderr",
      },
      // A replacement (`up --replace`) binds the same port, so the old router must be gone first: after the port check.
      { parent: this, deleteBeforeReplace: true, dependsOn: [args.after, args.install.ready, portCheck, front, ...controllerChecks] },
    );
    this.started = this.process.stdout.apply((out) => lastJsonLine<RouterStarted>(out));
    const proof = new command.remote.Command(
      `${name}-proof`,
      {
        connection: args.connection,
        create: pulumi.all([options, text]).apply(([o, doc]) =>
          proofScript({
            runDir: o.runDir,
            binDir: o.binDir,
            baseUrl: `http://${localAddress(o.bindAddress)}:${o.port}`,
            model: args.model,
            journalPath: journalBeside(profileStorePath(JSON.parse(doc) as Record<string, unknown>)),
            timeoutS: args.startTimeoutS,
          }),
        ),
        // Proved once per started router.
        triggers: [this.started.pid, this.started.startedAt],
        addPreviousOutputInEnv: false,
        logging: "stderr",
      },
      { parent: this, dependsOn: [this.process] },
    );
    this.proofCommand = proof;
    this.proof = proof.stdout.apply((out) => {
      const p = lastJsonLine<RouterProof>(out);
      const problems = judgeRouterProof(p, { engineCount: args.engineIds.length, model: args.model, engineIds: args.engineIds });
      if (problems.length > 0) throw new pulumi.ResourceError(`router proof failed: ${problems.join("; ")}`, this);
      return p;
    });
    this.registerOutputs({ url: this.url, started: this.started, proof: this.proof });
  }
}

/** narwhal-serve's default journal: `journal.jsonl` beside the profile store. */
export function journalBeside(storePath: string): string {
  const i = storePath.lastIndexOf("/");
  return i < 0 ? "journal.jsonl" : `${storePath.slice(0, i)}/journal.jsonl`;
}
