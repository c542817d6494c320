/**
 * The simulated fleet's host harness, for tests, benches and the program's e2e layer.
 *
 *   const fleet = await simUp();                  // idempotent; sim1..sim3 by default
 *   await runInHost("sim1", "ip route get 198.18.0.12");
 *   await restartSshdWithNewHostKey("sim2");
 *   await simDown();                              // removes everything the harness made
 *   await simUp({ dockerHosts: ["simdock"], aliases: ["simdock"] });   // a host with its own Docker Engine
 *   await loadDockerImage("simdock", imageId);    // from the machine's daemon into the host's
 *
 * Test helpers: sshExec (a verified ssh2 login to a host). See sim/hosts/README.md for how it works.
 */
export {
  simUp,
  simDown,
  simStatus,
  simFleet,
  restartSshd,
  restartSshdWithNewHostKey,
  restartSshdWithHostKey,
  readHostKeyPair,
  writeHostCheckpoint,
} from "./fleet";
export type { HostKeyPair, SimFleet, SimUpOptions, SimDownOptions, SimDownResult, SimStatus, HostStatus, HostAction } from "./fleet";
export type { SimHost } from "./host";
export type { SimGpu } from "./inventory";
export { runInHost, spawnInHost } from "./in-host";
export { setRdmaPortState, syncRdmaGids } from "./rdma";
export { loadDockerImage, HOST_DOCKER_SOCKET } from "./docker";
export { sshExec, sshConnect } from "./ssh-exec";
export type { SshExecOptions } from "./ssh-exec";
export { writeCheckpoint, TINY_LLAMA_CONFIG, DEFAULT_CHECKPOINT_SEED } from "./checkpoint";
export type { CheckpointOptions, CheckpointFile } from "./checkpoint";
export { fingerprintOf } from "./keys";
export { SimError } from "./exec";
export type { RunResult } from "./exec";
export * as constants from "./constants";
