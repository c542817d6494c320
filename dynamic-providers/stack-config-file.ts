/** Kept for the provider shims already in stack states, which load this path (`pins`); new code loads lib/. */
export { currentHostsConfig } from "../lib/ssh/stack-config-file";
