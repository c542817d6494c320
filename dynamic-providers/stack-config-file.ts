/** Loaded by path from every provider shim in state (shim.ts, `pins`): the reader itself lives in lib/. */
export { currentHostsConfig } from "../lib/ssh/stack-config-file";
