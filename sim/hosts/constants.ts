/**
 * Fixed names, addresses, paths and timeouts of the simulated fleet.
 *
 * Everything the harness creates lives on one private bridge in 198.18.0.0/24 (RFC 2544 benchmarking
 * space, never routed) and under <root>/.sim/, so `sim down` can find and remove all of it.
 */
import * as path from "node:path";

/** Project root (this file is <root>/sim/hosts/constants.ts). */
export const PROJECT_ROOT = path.resolve(__dirname, "..", "..");
/** All harness state: keys, per-host dirs, pid files, logs. Git-ignored. */
export const SIM_DIR = path.join(PROJECT_ROOT, ".sim");

export const BRIDGE = "nwbr0";
export const SUBNET_PREFIX = "198.18.0";
export const PREFIX_LEN = 24;
/** The root namespace's address on the bridge (the harness and the Pulumi program talk from here). */
export const GATEWAY_ADDRESS = `${SUBNET_PREFIX}.1`;
export const SUBNET_CIDR = `${SUBNET_PREFIX}.0/${PREFIX_LEN}`;
/** Host k gets 198.18.0.(10+k); k is 1-based. */
export const HOST_ADDRESS_OFFSET = 10;
/** Highest host index that still fits the /24 (10 + 240 = .250). */
export const MAX_HOSTS = 240;

/** Network namespace names are `nw-<alias>`; `sim down` removes every namespace with this prefix. */
export const NETNS_PREFIX = "nw-";
/** Root-namespace end of each host's veth pair (`nwv-<alias>`, at most 15 characters). */
export const VETH_PREFIX = "nwv-";
/** The host's end of its veth pair: the fabric interface discovery inspects. */
export const FABRIC_INTERFACE = "fab0";
export const SSH_PORT = 22;
export const SSH_USER = "root";

/** A non-root login that exists on every simulated host; hosts with `passwordAuth` accept its password. */
export const PASSWORD_USER = "narwhal";
export const PASSWORD_USER_UID = 1500;

/** Paths as seen inside every simulated host's mount namespace. */
export const HOST_MODELS_ROOT = "/models";
export const MODEL_NAME = "tiny-llama";
export const HOST_MODEL_DIR = `${HOST_MODELS_ROOT}/${MODEL_NAME}`;
/** The host's tool shims are bind-mounted here (empty on this machine, first on the login PATH). */
export const HOST_SHIM_DIR = "/usr/local/sbin";
export const HOST_PATH = `${HOST_SHIM_DIR}:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`;

/** Engine simulator defaults written to each host's sim config. */
export const ENGINE_VERSION = "0.29.0";
export const DEFAULT_TIME_SCALE = 0.05;
export const TIME_SCALE_ENV = "NARWHAL_SIM_TIME_SCALE";

// Bounded waits, named so a failure says which one ran out.
export const SSHD_READY_TIMEOUT_MS = 10_000;
export const ANCHOR_READY_TIMEOUT_MS = 10_000;
export const PROCESS_EXIT_TIMEOUT_MS = 3_000;
export const VETH_GONE_TIMEOUT_MS = 3_000;
export const LOCK_TIMEOUT_MS = 180_000;
export const COMMAND_TIMEOUT_MS = 30_000;
/** A docker host's own Docker Engine: until it answers, until it has shut down, and one image load. */
export const DOCKERD_READY_TIMEOUT_MS = 30_000;
export const DOCKERD_STOP_TIMEOUT_MS = 15_000;
export const DOCKER_IMAGE_LOAD_TIMEOUT_MS = 120_000;

/** Cgroup parent of a docker host's containers (`narwhal-sim-<alias>`), so `down` finds every one. */
export const DOCKER_CGROUP_PREFIX = "narwhal-sim-";
