import * as pulumi from "@pulumi/pulumi";
import * as command from "@pulumi/command";
import type { RouterSpec } from "../../lib/config";
import { installKey, installScript, uninstallScript, type InstallMarker, type InstallOptions, type NarwhalSource } from "../../lib/router/install";
import { shq } from "../../lib/shell";
import { lastJsonLine } from "../runtime/stdout";

export interface NarwhalInstallArgs {
  /** `router.narwhal`: the pinned version, or a source bundle with its digest, and where pip finds wheels. */
  narwhal: RouterSpec["narwhal"];
  connection: command.types.input.remote.ConnectionArgs;
  /** Folder on the router host that holds one subfolder per installed revision. */
  installDir: string;
}

/**
 * Gate B on the router host: the approved narwhal-inference revision in its own venv, through one
 * remote command. A source bundle is copied first and its digest checked on the host before pip sees
 * it. A new revision is a new install (its own folder), so everything that runs from the install is
 * replaced with it, and the old folder goes after them.
 */
export class NarwhalInstall extends pulumi.ComponentResource {
  /** The install marker: revision, installed version, digest of the installed files, bin folder. */
  public readonly marker: pulumi.Output<InstallMarker>;
  /** The command whose success is the install: later gates depend on it. */
  public readonly command: command.remote.Command;

  constructor(name: string, args: NarwhalInstallArgs, opts?: pulumi.ComponentResourceOptions) {
    super("narwhal:router:NarwhalInstall", name, {}, opts);
    const bundle = args.narwhal.sourceBundle;
    const source: NarwhalSource = bundle ? { kind: "bundle", sha256: bundle.sha256 } : { kind: "version", version: args.narwhal.version };
    const options: InstallOptions = {
      source,
      installDir: args.installDir,
      wheelhouse: args.narwhal.wheelhouse,
      bundlePath: bundle ? `${args.installDir}/bundles/${bundle.sha256}.tar.gz` : undefined,
      timeoutS: args.narwhal.installTimeoutS,
    };
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
    this.registerOutputs({ marker: this.marker });
  }
}
