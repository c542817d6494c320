/**
 * What the provider tests that start an engine on a simulated host share: its launch inputs (the
 * simulated tiny-llama at its 2048 positions, with the runbook's default policy) and the host's stored
 * login with its private key.
 */
import * as fs from "node:fs";
import type { LaunchInputs } from "../../../lib/launch/plan";
import { SshSession } from "../../../lib/ssh/client";
import { OPERATE, sshTarget } from "../../../lib/ssh/login";
import { readLogin, type StoredLogin } from "../../../lib/ssh/stored-login";
import type { SimHost } from "../../../sim/hosts";
import { launchInputs } from "../../unit/launch/inputs";

/** `engine` names its GPUs; TP is one rank per GPU unless `over.policy` says otherwise. */
export function simLaunch(
  h: SimHost,
  engine: Omit<LaunchInputs["engine"], "gpuIdsNamed">,
  over: { model?: Partial<LaunchInputs["model"]>; policy?: Partial<LaunchInputs["policy"]> } = {},
): LaunchInputs {
  return {
    engine: { ...engine, gpuIdsNamed: true },
    host: { alias: h.alias, fabricInterface: h.fabricInterface, fabricAddress: h.address, vendor: "nvidia" },
    model: { servedName: "tiny-llama", checkpointDir: h.modelDir, dtype: "bfloat16", maxPositionEmbeddings: 2048, ...over.model },
    policy: launchInputs({ blockSize: 16, maxModelLen: 2048, tensorParallelSize: engine.gpuIds.length, ...over.policy }).policy,
  };
}

export function simLogin(h: SimHost): { login: StoredLogin; privateKey: string } {
  return { login: { host: h.address, port: h.sshPort, user: h.user, hostKey: h.hostKey, connectTimeoutS: 20 }, privateKey: fs.readFileSync(h.privateKeyPath, "utf8") };
}

/** Runs a script on the host over the program's own SSH client (the start scripts read the env file from stdin). */
export async function onHost(h: SimHost, script: string, stdin = ""): Promise<{ code: number; stdout: string; stderr: string }> {
  const { login, privateKey } = simLogin(h);
  const ssh = await SshSession.open(sshTarget(readLogin(login, { alias: h.alias, privateKey }), OPERATE));
  try {
    return await ssh.exec(script, { stdin, timeoutS: 120, name: "test step" });
  } finally {
    ssh.close();
  }
}
