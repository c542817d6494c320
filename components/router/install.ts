import * as pulumi from "@pulumi/pulumi";
import * as command from "@pulumi/command";
import { OpaqueComponent } from "../opaque-component";
import type { RouterSpec } from "../../lib/config/types";
import { installKey, installScript, uninstallScript, venvDir, type InstallMarker, type InstallOptions, type NarwhalSource } from "../../lib/router/install";
import { shq } from "../../lib/shell";
import { CommandRecord } from "../../dynamic-providers/command-record/resource";
import { lastJsonLine } from "../../lib/json-line";
import { startKeyOf } from "../runtime/start-key";
import { InstallPresence } from "../../dynamic-providers/install-presence/resource";
import { loginInputs, loginSecrets } from "../login-inputs";

/** Bound on a refresh's look for the install on its host. */
const PRESENCE_PROBE_TIMEOUT_S = 30;

export interface NarwhalInstallArgs {
  /** `router.narwhal`: the pinned version, or a source bundle with its digest, and where pip finds wheels. */
  narwhal: RouterSpec["narwhal"];
  connection: command.types.input.remote.ConnectionArgs;
  /** Folder on the host that holds one subfolder per installed revision. */
  installDir: string;
  /** The host's alias: named in the install's messages and its evidence record. */
  hostAlias: string;
  /** Names the evidence folder (runs/<stack>/evidence). */
  stack: string;
  /**
   * Where this install and its record sat in state written before every engine host had an install:
   * under the router host's component, as `<install name>` and `<install name>-record`.
   */
  formerly?: { parent: pulumi.Input<string>; name: string };
}

function narwhalSource(narwhal: RouterSpec["narwhal"]): NarwhalSource {
  const bundle = narwhal.sourceBundle;
  return bundle ? { kind: "bundle", sha256: bundle.sha256 } : { kind: "version", version: narwhal.version };
}

/** The bin folder an install of `narwhal` into `installDir` has, known from the config alone. */
export function narwhalBinDir(narwhal: RouterSpec["narwhal"], installDir: string): string {
  return `${venvDir({ installDir, source: narwhalSource(narwhal) })}/bin`;
}

/**
 * Gate B on one host: the approved narwhal-inference revision in its own venv, through one remote
 * command, and the evidence record of what that command ran and printed. A source bundle is copied
 * first and its digest checked on the host before pip sees it. A new revision is a new install (its own
 * folder), so everything that runs from the install is replaced with it, and the old folder goes after
 * them. The router host runs the router and its tools from it, an engine host its attestation sidecars;
 * a host that is both has this one install.
 */
export class NarwhalInstall extends OpaqueComponent {
  /** The install marker: revision, installed version, digest of the installed files, bin folder. */
  public readonly marker: pulumi.Output<InstallMarker>;
  /** The command whose success is the install: later gates depend on it. */
  public readonly command: command.remote.Command;
  /** The install's bin folder, known from the config alone (the marker's `binDir` once it ran). */
  public readonly binDir: string;
  /** Gate B's evidence: the install script as it ran and the marker it printed. */
  public readonly record: CommandRecord;
  /**
   * What runs from the install waits on this: the install's command, then its presence, which a refresh
   * that found the install gone turns into an install again in the same `up`.
   */
  public readonly ready: InstallPresence;

  constructor(name: string, args: NarwhalInstallArgs, opts?: pulumi.ComponentResourceOptions) {
    const formerly = args.formerly ? [{ name: args.formerly.name, parent: args.formerly.parent }] : [];
    super("narwhal:router:NarwhalInstall", name, {}, pulumi.mergeOptions(opts, { aliases: formerly }));
    const bundle = args.narwhal.sourceBundle;
    const source = narwhalSource(args.narwhal);
    const options: InstallOptions = {
      source,
      host: args.hostAlias,
      installDir: args.installDir,
      wheelhouse: args.narwhal.wheelhouse,
      bundlePath: bundle ? `${args.installDir}/bundles/${bundle.sha256}.tar.gz` : undefined,
      timeoutS: args.narwhal.installTimeoutS,
    };
    this.binDir = narwhalBinDir(args.narwhal, args.installDir);
    const dependsOn: pulumi.Resource[] = [];
    if (bundle && options.bundlePath) {
      const folder = new command.remote.Command(
        `${name}-bundle-dir`,
        { connection: args.connection, create: `mkdir -p ${shq(`${args.installDir}/bundles`)} && chmod 700 ${shq(args.installDir)} ${shq(`${args.installDir}/bundles`)}`, addPreviousOutputInEnv: false },
        { parent: this },
      );
      dependsOn.push(
        new command.remote.CopyToRemote(
          `${name}-bundle`,
          { connection: args.connection, source: new pulumi.asset.FileAsset(bundle.path), remotePath: options.bundlePath, triggers: [bundle.sha256] },
          { parent: this, dependsOn: [folder] },
        ),
      );
    }
    this.command = new command.remote.Command(
      `${name}-venv`,
      {
        connection: args.connection,
        create: installScript(options),
        delete: uninstallScript(options),
        // The revision, folder and wheel source define the install; the marker adopts an unchanged one.
        triggers: [installKey(options)],
        addPreviousOutputInEnv: false,
        logging: "stderr",
      },
      { parent: this, dependsOn },
    );
    this.marker = this.command.stdout.apply((out) => lastJsonLine<InstallMarker>(out));
    const c = this.command;
    this.record = new CommandRecord(
      `${name}-record`,
      {
        stack: args.stack,
        kind: "install",
        hostAlias: args.hostAlias,
        steps: pulumi.all([pulumi.all([c.create, c.stdout]).apply(([script, stdout]) => ({ name: "install", script: script ?? "", stdout }))]),
        observations: { marker: this.marker },
        // A re-run of the install (new login details) adopts the venv and prints the same marker.
        startKey: startKeyOf(c),
      },
      { parent: this, aliases: args.formerly ? [{ name: `${args.formerly.name}-record`, parent: args.formerly.parent }] : [] },
    );
    const login = loginInputs(args.connection);
    this.ready = new InstallPresence(
      `${name}-presence`,
      { hostAlias: args.hostAlias, stack: args.stack, login: login.login, credentials: loginSecrets(login), install: options, probeTimeoutS: PRESENCE_PROBE_TIMEOUT_S },
      { parent: this, dependsOn: [this.command] },
    );
    this.registerOutputs({ marker: this.marker });
  }
}
