/**
 * ProfileStore provider methods, loaded at call time by resource.ts (through dynamic-providers/shim.ts).
 *
 * - check:  the path, the engine list and the profiles (ids equal to the fleet's, rows valid) before
 *           anything remote is touched;
 * - create/update: reads every profile's sidecar entry from the evidence store (digest checked), builds
 *           the store and its `.samples.json` sidecar in narwhal's schema and writes them to the router
 *           host over SFTP (write then rename, 0600, never through a symlink); digests go to state;
 * - diff:   a new profile, path, fleet or router changes the files; updates in place (the files are
 *           replaced whole), so nothing downstream of the store is replaced for its own sake;
 * - delete: leaves the files: the router's retained evidence.
 */
import type * as pulumi from "@pulumi/pulumi";
import { stackEvidenceStore } from "../../lib/evidence/stack-store";
import { documentBytes, samplesDocument, storeDocument, type EngineSamples } from "../../lib/profiling/store";
import { localTarget } from "../../lib/profiling/local-target";
import { ProfileError } from "../../lib/profiling/errors";
import { publishStore, type FileTarget } from "../../lib/profiling/publish";
import { withSsh } from "../../lib/ssh/client";
import { OPERATE, sshTarget } from "../../lib/ssh/login";
import { readLogin } from "../../lib/ssh/stored-login";
import { withHostKeyOf } from "../../lib/ssh/host-key";
import { canonicalJson } from "../../lib/digest";
import { evidenceProvider, schemaFailures } from "../evidence-provider";
import { sftpTarget } from "../../lib/ssh/sftp-target";
import { storeInputs, type ProfileStoreInputs, type ProfileStoreOutputs } from "./schema";

export const UPDATABLE = ["path", "engineIds", "model", "sweep", "profiles", "router", "routerPrivateKey", "routerPassword", "stack"] as const;

async function withTarget<T>(i: ProfileStoreInputs, fn: (t: FileTarget) => Promise<T>): Promise<T> {
  if (!i.router) return fn(localTarget());
  return withSsh(sshTarget(readLogin(i.router, { privateKey: i.routerPrivateKey, password: i.routerPassword }), OPERATE), async (session) => {
    const t = await sftpTarget(session);
    try {
      return await fn(t);
    } finally {
      t.close();
    }
  });
}

/** Builds both documents from the recorded profiles and writes them; exported for tests. */
export async function writeStore(i: ProfileStoreInputs): Promise<ProfileStoreOutputs> {
  const problems = schemaFailures(storeInputs, i);
  if (problems.length) throw new ProfileError("NARWHAL_PROFILE_STORE", problems.map((f) => `${f.property}: ${f.reason}`).join("; "));
  const evidence = stackEvidenceStore(i.stack);
  const entries: Record<string, EngineSamples> = {};
  for (const p of i.profiles) {
    const bytes = await evidence.readArtifact(p.samples.relativePath, p.samples.sha256);
    const entry = JSON.parse(bytes.toString("utf8")) as EngineSamples & { warm_up?: unknown };
    // State gives objects back with their keys reordered: compare content, and write the recorded row.
    if (canonicalJson(entry.profile) !== canonicalJson(p.row)) throw new ProfileError("NARWHAL_PROFILE_STORE", `engine ${p.engineId}: the recorded samples describe another profile than the one in state`);
    entries[p.engineId] = entry;
  }
  const meta = { package: "narwhal-fleet", writer: "Profile/ProfileStore", stack: i.stack };
  const store = documentBytes(storeDocument(i.profiles.map((p) => entries[p.engineId].profile), meta));
  const samples = documentBytes(samplesDocument(entries, { meta, model: i.model, sweep: i.sweep }));
  const written = await withTarget(i, (t) => publishStore(t, i.path, store, samples));
  return { ...i, storeDigest: written.digest, samplesPath: written.samplesPath, samplesDigest: written.samplesDigest, count: i.profiles.length, writtenAt: new Date().toISOString() };
}

export const provider: pulumi.dynamic.ResourceProvider = evidenceProvider<ProfileStoreInputs, ProfileStoreOutputs>({
  // Nothing here was measured: every change rewrites the files in place.
  measuredAgainst: [],
  updatable: UPDATABLE,
  inputs: storeInputs,
  // A re-pinned router host key alone changes nothing here (lib/ssh/host-key.ts, withHostKeyOf).
  compared: (olds, news) => ({ olds, news: { ...news, router: withHostKeyOf(news.router, olds.router) } }),
  async create(inputs) {
    const outs = await writeStore(inputs);
    return { id: `profiles-${outs.storeDigest.slice(7, 19)}`, outs };
  },
  update: (_olds, news) => writeStore(news),
});
