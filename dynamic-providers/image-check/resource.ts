import * as pulumi from "@pulumi/pulumi";
import type * as command from "@pulumi/command";
import type { CheckRuntime } from "../../lib/image-check";
import { dynamicResource, type ArgsOf } from "../declare";
import type { ImageCheckInputs, ImageCheckLogin, ImageCheckOutputs } from "./types";

export type ImageCheckArgs = ArgsOf<ImageCheckInputs>;

/**
 * Gate C evidence that one engine's runtime can serve its plan: immutable runtime identity, pinned
 * package versions, connector resolution, DS layout when required, tokenizer construction with the
 * plan's trust setting, and `vllm_api_version`. Replaced when the plan hash (or the pins, runtime,
 * checkpoint dir) changes; its launch.json and every run's output stay in the evidence store.
 */
export class ImageCheck extends dynamicResource<ImageCheckInputs, ImageCheckOutputs>()({
  type: "ImageCheck",
  provider: "dynamic-providers/image-check/provider.ts",
  outputs: ["checkId", "checkDigest", "vllmApiVersion", "identity", "findings", "checkedAt", "evidence", "launchJson", "log"],
  secretOutputs: ["privateKey", "password"],
}) {}

/**
 * The check's login from the engine's remote-command connection: address, user and pinned key in the
 * clear (they are not secrets, though the connection as a whole is secret because it holds the key),
 * credentials as their own secret outputs.
 */
export function imageCheckLogin(connection: pulumi.Input<command.types.input.remote.ConnectionArgs>): {
  login: pulumi.Output<ImageCheckLogin>;
  privateKey: pulumi.Output<string | undefined>;
  password: pulumi.Output<string | undefined>;
} {
  const c = pulumi.output(connection);
  const login = c.apply(
    (c): ImageCheckLogin => ({
      host: c.host,
      port: c.port ?? 22,
      user: c.user ?? "root",
      hostKey: c.hostKey ?? "",
      connectTimeoutS: c.perDialTimeout ?? 15,
      ...(c.proxy ? { jump: { host: c.proxy.host, port: c.proxy.port ?? 22, user: c.proxy.user ?? "root", ...(c.proxy.hostKey ? { hostKey: c.proxy.hostKey } : {}) } } : {}),
    }),
  );
  return { login: pulumi.unsecret(login), privateKey: c.apply((c) => c.privateKey), password: c.apply((c) => c.password) };
}

/** The check's runtime from `FleetSpec.runtime`: both container backends check the same image. */
export function checkRuntimeOf(runtime: { kind: string; vllmCommand: string; image?: string; dockerCommand: string }): CheckRuntime {
  return runtime.kind === "native"
    ? { kind: "native", vllmCommand: runtime.vllmCommand }
    : { kind: "docker", image: runtime.image ?? "", dockerCommand: runtime.dockerCommand };
}
