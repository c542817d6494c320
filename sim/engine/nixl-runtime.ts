/**
 * The NIXL library under the simulated vLLM: which version the image declares, and what that version does
 * when a peer's process is gone (vLLM #49238).
 *
 * A vLLM image declares NIXL as an installed distribution (`nixl-<version>.dist-info`). The simulator reads
 * it where the image keeps it: sim/python beside this folder on a simulated host (the folder its `python3`
 * imports from), the image's site-packages in the simulator image (sim/image/build.ts copies it there).
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

/** The simulator image's site-packages, where build.ts puts the simulated distributions' metadata. */
export const IMAGE_SITE_PACKAGES = "/usr/local/lib/python3.12/dist-packages";

/** Where a simulated engine looks for the NIXL distribution: the host's sim/python, then the image's site-packages. */
export const NIXL_SEARCH_PATH: readonly string[] = [join(__dirname, "..", "python"), IMAGE_SITE_PACKAGES];

/**
 * Simulated seconds after a peer's process is gone before a UCX endpoint to it fails ("Endpoint timeout",
 * CONNECTED -> FAILED). #49238 saw about 3 minutes. Scaled by the time scale like every simulated duration;
 * a host's sim config (`nixl.endpointTimeoutS`) or the control port (POST /nixl) can shorten it for a test.
 */
export const UCX_ENDPOINT_TIMEOUT_S = 180;

/** Distribution names NIXL ships under (the CUDA-flavoured wheels carry the suffix). */
const NIXL_NAME = /^nixl(?:[-_]cu\d+)?$/i;

export interface NixlDistribution {
  name: string;
  version: string;
  /** The METADATA file it was read from. */
  source: string;
}

/** The first NIXL distribution on `searchPath` (a folder's `*.dist-info/METADATA` named nixl), or null. */
export function findNixlDistribution(searchPath: readonly string[] = NIXL_SEARCH_PATH): NixlDistribution | null {
  for (const dir of searchPath) {
    if (!existsSync(dir)) continue;
    for (const entry of readdirSync(dir).filter((e) => e.endsWith(".dist-info")).sort()) {
      const source = join(dir, entry, "METADATA");
      if (!existsSync(source)) continue;
      const text = readFileSync(source, "utf8");
      const name = /^Name:\s*(\S+)/m.exec(text)?.[1];
      const version = /^Version:\s*(\S+)/m.exec(text)?.[1];
      if (name && version && NIXL_NAME.test(name)) return { name, version, source };
    }
  }
  return null;
}

/** The release segment of a PEP 440 version ("1.4.1" of "1.4.1.post2"), or null when it has none. */
export function releaseOf(version: string): number[] | null {
  const m = /^v?(\d+(?:\.\d+)*)/.exec(version.trim());
  return m ? m[1].split(".").map(Number) : null;
}

function compare(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const d = (a[i] ?? 0) - (b[i] ?? 0);
    if (d !== 0) return Math.sign(d);
  }
  return 0;
}

/**
 * Whether a NIXL version has ai-dynamo/nixl PR #1987 ("Fixes a race in the UCX backend between synchronous
 * rkey unpack and endpoint teardown", commit 3e3e083c9, merged to main 2026-07-29), which makes
 * loadRemoteMD return NIXL_ERR_REMOTE_DISCONNECT instead of segfaulting in ucp_ep_rkey_unpack.
 *
 * - Below 1.5.0: without it. Verified in the nixl git history: the commit is not an ancestor of tags 0.7.1,
 *   v1.3.2 or v1.4.0, nor of branch release/1.4.1 (as of 2026-08-19); 1.4.1 was released 2026-09-01 from
 *   that branch. Patch releases after 1.4.1 are taken as cut from the same branch.
 * - 1.5.0 and later: with it. An inference, not verified: 1.5.0 (released 2026-09-30) was cut from main
 *   after the fix landed there, but the mirror read ends before that release.
 *
 * Only the release segment counts, so 1.5.0rc1 is taken as fixed too. Throws on a version with no release
 * segment: the simulator must not guess at a crash rule.
 */
export function hasRkeyUnpackFix(version: string): boolean {
  const release = releaseOf(version);
  if (release === null) throw new Error(`NIXL version '${version}' has no release segment (expected e.g. 0.7.1)`);
  return compare(release, [1, 5, 0]) >= 0;
}
