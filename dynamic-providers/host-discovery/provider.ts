/**
 * HostDiscovery provider methods (Gate A), loaded at call time by resource.ts (see ../shim.ts).
 * create: one SSH login (the observation: lib/discovery/observe.ts); the probe (hardware, fabric, model,
 *   runtime, listeners, devices), then the checkpoint hash on every core of the host; one evidence record.
 * read: the same login, probe and a fingerprint-only re-hash, recorded as `observed` beside the
 *   untouched `measured` facets, so `pulumi preview --refresh` names what changed on the host.
 * delete: removes the stack's folder on the host (../../lib/fleet/host-cleanup.ts) unless
 *   `hosts[].retainOnDestroy`; the evidence record under runs/ stays.
 */
import type * as pulumi from "@pulumi/pulumi";
import { randomBytes } from "node:crypto";
import { withSsh } from "../../lib/ssh/client";
import { sshTarget, type SshTarget } from "../../lib/ssh/login";
import { readLogin } from "../../lib/ssh/stored-login";
import { pinAgrees } from "../../lib/ssh/host-key";
import { observeHost, type ObserveOptions } from "../../lib/discovery/observe";
import { sha256Json } from "../../lib/digest";
import { facetsOf, type FacetDigests } from "../../lib/discovery/facets";
import { evidenceProvider } from "../evidence-provider";
import { providerEvidence } from "../../lib/evidence/provider-evidence";
import { keepFailedAttempt, newAttempt } from "../failed-attempt";
import { discoveryInputs, type HostDiscoveryInputs, type HostDiscoveryOutputs } from "./schema";
import { cleanupScript, stackFolder } from "../../lib/fleet/host-cleanup";

/**
 * Inputs whose change means the old observation no longer describes what the engines will use. The pinned
 * host key is not one of them (see `diff`): a key says which login to trust, and a re-keyed host with the
 * same name, hardware, fabric, model, runtime and files is the host that was measured.
 */
const MEASURED_AGAINST = [
  "host", "port", "user", "fabricInterface",
  "modelDir", "runtimeRef", "devicePaths", "policyDigest", "rdmaPorts",
] as const;
/** Inputs that only change how we log in or what the next launch must avoid. */
const UPDATABLE = ["privateKey", "password", "jump", "allowFirstContact", "connectTimeoutS", "maxSessions", "plannedPorts", "runbookRuns", "stack", "stateDir", "retainOnDestroy"] as const;

/**
 * Discovery is the login that may learn the host's key (ssh.allowFirstContact). A key this discovery recorded
 * (verified at its last login) outranks the pin it was created with. The inputs keep the names stacks have
 * always stored (`pinnedHostKey`).
 */
function target(i: HostDiscoveryInputs, recordedHostKey?: string): SshTarget {
  const login = readLogin(i, { privateKey: i.privateKey, password: i.password });
  return sshTarget(recordedHostKey ? { ...login, hostKey: recordedHostKey } : login, { kind: "discover", allowFirstContact: i.allowFirstContact });
}

/** One login, one observation (lib/discovery/observe.ts). */
const observe = (i: HostDiscoveryInputs, opts: ObserveOptions & { recordedHostKey?: string }) => withSsh(target(i, opts.recordedHostKey), (ssh) => observeHost(ssh, i, opts));

export const provider: pulumi.dynamic.ResourceProvider = evidenceProvider<HostDiscoveryInputs, HostDiscoveryOutputs>({
  measuredAgainst: MEASURED_AGAINST,
  updatable: UPDATABLE,
  inputs: discoveryInputs,

  async create(inputs) {
    const claim = randomBytes(12).toString("hex");
    const attempt = newAttempt();
    const { privateKey: _key, password: _password, ...asGiven } = inputs;
    const seen = await observe(inputs, { preLaunch: true, claim, attempt }).catch((err: unknown) =>
      keepFailedAttempt(err, { stack: inputs.stack, secrets: [inputs.privateKey, inputs.password], kind: "discovery", subject: { kind: "host", alias: inputs.alias }, inputs: { ...asGiven, plannedPorts: sha256Json(inputs.plannedPorts) } }, attempt),
    );
    const facets = facetsOf(seen.facts);
    const factsDigest = sha256Json(facets);
    const { privateKey: _k, password: _p, ...measuredAgainst } = inputs;
    const evidence = await providerEvidence(inputs.stack, [inputs.privateKey, inputs.password]).record({
      kind: "discovery",
      subject: { kind: "host", alias: inputs.alias },
      inputs: { ...measuredAgainst, plannedPorts: sha256Json(inputs.plannedPorts) },
      commands: [{ scriptSha256: seen.probeSha256, host: inputs.alias, exitStatus: 0, startedAt: seen.startedAt, endedAt: seen.endedAt }],
      startedAt: seen.startedAt,
      endedAt: seen.endedAt,
      observations: { ...seen.facts, facets } as never,
      verdict: { status: "pass", reasons: [] },
      artifacts: [],
    });
    const outs: HostDiscoveryOutputs = { ...inputs, ...seen.facts, measured: facets, observed: facets, factsDigest, evidence, observedAt: seen.endedAt, claim };
    return { id: `${inputs.alias}-${factsDigest.slice(7, 19)}`, outs };
  },

  // An update changes only access settings or the next launch's ports: the observation stands.
  addition(olds, news) {
    // `fabricAddressChoice` is neither: naming another address than the one measured moves every
    // endpoint derived from it; naming the measured one (or none, while it stands) changes nothing.
    const readdressed = news.fabricAddressChoice !== undefined && news.fabricAddressChoice !== olds.fabricAddress ? ["fabricAddressChoice"] : [];
    // A refresh that saw the host change: the facets that moved are the reasons to re-measure.
    const moved = (Object.keys(olds.measured ?? {}) as Array<keyof FacetDigests>).filter((k) => olds.observed?.[k] !== olds.measured[k]);
    // A pin is measured against only while no login has shown the host presenting it: after a refresh
    // logged in with it (and `read` recorded it), the observation above already says whether this is the
    // host that was measured. Without such a refresh (the key pinned where a refresh does not look, such
    // as an ESC environment), nothing has seen the host under the new key, so it is discovered again.
    const repinned = news.pinnedHostKey !== undefined && !pinAgrees(news.pinnedHostKey, olds.hostKey) ? ["pinnedHostKey"] : [];
    return { replaces: [...repinned, ...readdressed, ...moved] };
  },

  async read(id, props) {
    // The recorded key is checked again, so a changed key fails here with both fingerprints, unless the
    // operator has pinned the new one in the stack's config (the login prefers that pin).
    const seen = await observe(props, { recordedHostKey: props.hostKey, previous: props.checkpoint, preLaunch: false, recordedFabricAddress: props.fabricAddress });
    // A login only succeeds with the recorded key or the operator's pin, so a new key here is one the
    // operator vouched for: it names the same host, and the identity facet stays what was measured while
    // the hostname does (a rotated key on the same host and hardware invalidates no measurement). The key
    // the facets were measured with is kept beside the new one, so later refreshes compare against it.
    const measuredHostKey = props.measuredHostKey ?? props.hostKey;
    const observed = facetsOf({ ...seen.facts, hostKey: measuredHostKey });
    // The recorded measurement is never rewritten; only fingerprints of unchanged files are refreshed.
    const checkpoint = observed.checkpoint === props.measured.checkpoint ? seen.facts.checkpoint : props.checkpoint;
    const { measuredHostKey: _held, ...rest } = props;
    const key = { hostKey: seen.facts.hostKey, hostKeyFingerprint: seen.facts.hostKeyFingerprint, ...(seen.facts.hostKey === measuredHostKey ? {} : { measuredHostKey }) };
    return { id, props: { ...rest, checkpoint, observed, ...key } };
  },

  async delete(_id, props) {
    // Everything that wrote on this host logged in with this discovery's key, so it was deleted first.
    // A discovery created before claims existed owns nothing it can prove; it leaves the folder.
    if (!props.claim) return;
    const folder = stackFolder(props.stateDir, props.stack);
    await withSsh(target(props, props.hostKey), (ssh) => ssh.run(cleanupScript(folder, props.claim!, props.retainOnDestroy === true), { timeoutS: 60, name: `remove ${folder}` }));
  },
});
