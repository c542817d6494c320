/**
 * The pinned narwhal-inference wheels at /srv/narwhal-wheels inside every host. Simulated hosts have no
 * route to a package index (as many GPU hosts don't), so Gate B installs from this folder on the router
 * host and on every engine host (config `router.narwhal.wheelhouse`). The wheels come from scripts/setup.sh's download and are
 * hard-linked (copied across filesystems) into the host's /srv, so a kept host gets them too.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { PROJECT_ROOT } from "./constants";
import type { HostPaths } from "./paths";

export const HOST_WHEELHOUSE = "/srv/narwhal-wheels";
const SOURCE = path.join(PROJECT_ROOT, ".tools", "wheelhouse");

/** Returns the wheel files placed; none when setup has not downloaded them. */
export function writeWheelhouse(p: HostPaths): string[] {
  if (!fs.existsSync(SOURCE)) return [];
  const target = path.join(p.srvDir, path.basename(HOST_WHEELHOUSE));
  fs.mkdirSync(target, { recursive: true });
  const placed: string[] = [];
  for (const release of fs.readdirSync(SOURCE)) {
    const dir = path.join(SOURCE, release);
    if (!fs.existsSync(path.join(dir, ".complete"))) continue;
    for (const wheel of fs.readdirSync(dir).filter((f) => /\.(whl|tar\.gz|zip)$/.test(f))) {
      const to = path.join(target, wheel);
      if (!fs.existsSync(to)) {
        try {
          fs.linkSync(path.join(dir, wheel), to);
        } catch {
          fs.copyFileSync(path.join(dir, wheel), to);
        }
      }
      placed.push(wheel);
    }
  }
  return placed;
}
