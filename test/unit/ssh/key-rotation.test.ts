/**
 * A host re-keyed and re-pinned by the operator, as each provider's diff sees it: a key verifies logins,
 * it is never what a measurement was taken against, so nothing replaces or updates for it alone, and a
 * preview that cannot know what a re-run start command prints holds what it printed before.
 */
import { expect } from "chai";
import { pinAgrees, withHostKeyOf } from "../../../lib/ssh/host-key";
import { heldWhileStartStands } from "../../../lib/evidence/diff";
import { UNKNOWN } from "../../../lib/unknown";
import { provider as discovery } from "../../../dynamic-providers/host-discovery/provider";
import { provider as imageCheck } from "../../../dynamic-providers/image-check/provider";
import { provider as fabricEdge } from "../../../dynamic-providers/fabric-edge/provider";
import { provider as generation } from "../../../dynamic-providers/engine-generation/provider";
import { provider as cacheCapture } from "../../../dynamic-providers/cache-capture/provider";
import { provider as attestation } from "../../../dynamic-providers/attestation/provider";
import { ed25519Line } from "../config/fixtures";

const OLD = ed25519Line(1);
const NEW = ed25519Line(2);
const NO_CHANGE = { changes: false, replaces: [], deleteBeforeReplace: false };
type Props = Record<string, unknown>;
const diff = (p: { diff?: (id: string, olds: never, news: never) => Promise<unknown> }, olds: Props, news: Props) => p.diff!("id", olds as never, news as never);

describe("ssh: a re-keyed host, pinned again", () => {
  it("compares a pin with a recorded key as keys, comment or not", () => {
    expect(pinAgrees(`${NEW} root@gpu-b`, NEW)).to.equal(true);
    expect(pinAgrees(NEW, OLD)).to.equal(false);
    expect(pinAgrees(NEW, undefined)).to.equal(false);
    expect(pinAgrees("ssh-ed25519 AAAA", "ssh-ed25519 AAAA")).to.equal(false);
  });

  it("shows a diff each login with the key the old state holds", () => {
    expect(withHostKeyOf({ host: "10.0.0.2", hostKey: NEW }, { host: "10.0.0.2", hostKey: OLD })).to.deep.equal({ host: "10.0.0.2", hostKey: OLD });
    expect(withHostKeyOf({ host: "10.0.0.3", hostKey: NEW }, { host: "10.0.0.2", hostKey: OLD })).to.deep.equal({ host: "10.0.0.3", hostKey: OLD });
    expect(withHostKeyOf({ host: "10.0.0.2", hostKey: NEW }, undefined)).to.deep.equal({ host: "10.0.0.2", hostKey: NEW });
  });

  it("holds what a start command printed only while its start key stands and the value is unknown", () => {
    const olds = { identity: { pid: 41 }, startKey: "sha256:a", url: "u" };
    expect(heldWhileStartStands(olds, { identity: UNKNOWN as never, startKey: "sha256:a", url: "v" }, ["identity"], "startKey")).to.deep.equal({ identity: { pid: 41 }, startKey: "sha256:a", url: "v" });
    // A new start key is a replaced command: a new process, whose identity the preview cannot know.
    expect(heldWhileStartStands(olds, { identity: UNKNOWN as never, startKey: "sha256:b", url: "u" }, ["identity"], "startKey").identity).to.equal(UNKNOWN);
    expect(heldWhileStartStands(olds, { identity: UNKNOWN as never, startKey: UNKNOWN, url: "u" }, ["identity"], "startKey").identity).to.equal(UNKNOWN);
    // Known values are never held: `up` compares what the command printed.
    expect(heldWhileStartStands(olds, { identity: { pid: 42 }, startKey: "sha256:a", url: "u" }, ["identity"], "startKey").identity).to.deep.equal({ pid: 42 });
    // State written before the key existed holds nothing.
    expect(heldWhileStartStands({ identity: { pid: 41 } }, { identity: UNKNOWN, startKey: "sha256:a" }, ["identity"], "startKey").identity).to.equal(UNKNOWN);
  });

  describe("discovery", () => {
    const facets = { identity: "i", accelerators: "a", fabric: "f", model: "m", runtime: "r", checkpoint: "c" };
    const inputs: Props = {
      alias: "gpu-b", host: "10.0.0.2", port: 22, user: "root", allowFirstContact: true, connectTimeoutS: 30, maxSessions: 4,
      fabricInterface: "fab0", modelDir: "/models/m", runtimeRef: { kind: "native", vllmCommand: "vllm" }, devicePaths: [],
      plannedPorts: [], policyDigest: "sha256:p", stack: "dev", stateDir: "/var/lib/narwhal-fleet",
    };
    // A refresh logged in with the operator's new pin and saw the same host: `read` recorded the key it presented.
    const refreshed = { ...inputs, hostKey: NEW, measuredHostKey: OLD, measured: facets, observed: facets, factsDigest: "sha256:f" };

    it("keeps the measurement once a refresh logged in with the new pin and saw the same facets", async () => {
      expect(await diff(discovery, refreshed, { ...inputs, pinnedHostKey: `${NEW} root@gpu-b` })).to.deep.equal(NO_CHANGE);
      // Unpinning keeps logging in with the recorded key: nothing to measure either.
      expect(await diff(discovery, refreshed, inputs)).to.deep.equal(NO_CHANGE);
    });

    it("measures again under a pin no login has seen the host present, or when a facet moved", async () => {
      const unseen = { ...refreshed, hostKey: OLD, measuredHostKey: undefined };
      expect(await diff(discovery, unseen, { ...inputs, pinnedHostKey: NEW })).to.deep.equal({ changes: true, replaces: ["pinnedHostKey"], deleteBeforeReplace: false });
      expect(await diff(discovery, { ...refreshed, observed: { ...facets, accelerators: "b" } }, { ...inputs, pinnedHostKey: NEW })).to.deep.equal({ changes: true, replaces: ["accelerators"], deleteBeforeReplace: false });
    });
  });

  it("keeps an image check whose login only presents a new key", async () => {
    const login = { host: "10.0.0.2", port: 22, user: "root", hostKey: OLD, connectTimeoutS: 30 };
    const olds = { engineId: "e2", planSha256: "sha256:p", runtime: { kind: "native" }, modelDir: "/m", pins: [], dsRequired: false, hostAlias: "gpu-b", stack: "dev", login };
    expect(await diff(imageCheck, olds, { ...olds, login: { ...login, hostKey: NEW } })).to.deep.equal(NO_CHANGE);
    expect(await diff(imageCheck, olds, { ...olds, login: { ...login, hostKey: UNKNOWN } })).to.deep.equal(NO_CHANGE);
    expect(await diff(imageCheck, olds, { ...olds, login: { ...login, port: 2222, hostKey: NEW } })).to.deep.equal({ changes: true, replaces: [], deleteBeforeReplace: false });
  });

  it("keeps a fabric edge whose end only presents a new key, and still re-measures another machine", async () => {
    const end = (alias: string, n: number, hostKey: string) => ({ alias, sshHost: `10.0.0.${n}`, fabricInterface: "fab0", hostKey, fabricAddress: `10.0.1.${n}` });
    const olds = { edgeId: "gpu-a->gpu-b", source: end("gpu-a", 1, OLD), destination: end("gpu-b", 2, OLD), transport: "tcp", tool: { kind: "iperf3" }, stack: "dev", requiredGbps: 10 };
    expect(await diff(fabricEdge, olds, { ...olds, destination: end("gpu-b", 2, NEW) })).to.deep.equal(NO_CHANGE);
    expect(await diff(fabricEdge, olds, { ...olds, destination: end("gpu-b", 3, NEW) })).to.deep.equal({ changes: true, replaces: ["destination"], deleteBeforeReplace: false });
  });

  describe("an engine whose start command runs again under the new key", () => {
    const identity = { hostAlias: "gpu-b", pid: 4242 };
    const gen = { engineId: "e2", hostAlias: "gpu-b", url: "http://10.0.0.2:8302", planSha256: "sha256:p", expectedVersion: "0.29.0", servedName: "m", processIdentity: identity, processStartKey: "sha256:s", probeTimeoutS: 60, stack: "dev", generationDigest: "sha256:g" };

    it("keeps the generation and the cache capture in a preview, which cannot know the identity the start prints again", async () => {
      expect(await diff(generation, gen, { ...gen, processIdentity: UNKNOWN, adopted: UNKNOWN })).to.deep.equal(NO_CHANGE);
      const cache = { engineId: "e2", hostAlias: "gpu-b", url: gen.url, generationDigest: "sha256:g", planSha256: "sha256:p", processIdentity: identity, processStartKey: "sha256:s", expected: {}, stack: "dev" };
      expect(await diff(cacheCapture, cache, { ...cache, processIdentity: UNKNOWN })).to.deep.equal(NO_CHANGE);
    });

    it("replaces the generation when the start is replaced (a new start key) or printed another process", async () => {
      expect(await diff(generation, gen, { ...gen, processIdentity: UNKNOWN, processStartKey: "sha256:t" })).to.include({ changes: true }).and.have.property("replaces").that.includes("processIdentity");
      expect(await diff(generation, gen, { ...gen, processIdentity: { hostAlias: "gpu-b", pid: 4243 } })).to.have.property("replaces").that.includes("processIdentity");
    });

    it("keeps a KV peer's generation while the peer's start runs again, and replaces it once the peer is started anew", async () => {
      const peer = (processIdentity: unknown, processStartKey: unknown) => ({ e1: { url: "http://10.0.0.1:8301", processIdentity, processStartKey } });
      const withPeers = { ...gen, peers: peer({ hostAlias: "gpu-a", pid: 11 }, "sha256:k1") };
      expect(await diff(generation, withPeers, { ...withPeers, peers: peer(UNKNOWN, "sha256:k1") })).to.deep.equal(NO_CHANGE);
      expect(await diff(generation, withPeers, { ...withPeers, peers: peer(UNKNOWN, UNKNOWN) })).to.have.property("replaces").that.deep.equals(["peers"]);
      expect(await diff(generation, withPeers, { ...withPeers, peers: peer({ hostAlias: "gpu-a", pid: 12 }, "sha256:k1") })).to.have.property("replaces").that.deep.equals(["peers"]);
      // State written before peers carried a start key: nothing to tell a re-run from a new start by.
      expect(await diff(generation, { ...gen, peers: { e1: { url: "http://10.0.0.1:8301", processIdentity: { hostAlias: "gpu-a", pid: 11 } } } }, { ...withPeers, peers: peer(UNKNOWN, "sha256:k1") }))
        .to.have.property("replaces")
        .that.deep.equals(["peers"]);
    });

    it("keeps the attestation while its sidecar's start runs again", async () => {
      const att = { engineId: "e2", hostAlias: "gpu-b", url: "u", documentDigest: "sha256:d", generationDigest: "sha256:g", processStartTime: 1, version: "0.29.0", processIdentity: identity, planSha256: "sha256:p", cacheLayoutDigest: "sha256:l", sidecar: { pid: 7, startedAt: "t" }, sidecarStartKey: "sha256:k", probeTimeoutS: 60, stack: "dev" };
      expect(await diff(attestation, att, { ...att, sidecar: UNKNOWN })).to.deep.equal(NO_CHANGE);
      expect(await diff(attestation, att, { ...att, sidecar: UNKNOWN, sidecarStartKey: "sha256:other" })).to.have.property("replaces").that.includes("sidecar");
    });
  });
});
