/** {@link FileTarget} on this machine's disk (a router on the management host, and tests). */
import { promises as fs, constants } from "node:fs";
import type { FileTarget } from "./publish";

export function localTarget(label = "this machine"): FileTarget {
  return {
    label,
    async lstat(p) {
      try {
        const st = await fs.lstat(p);
        return st.isSymbolicLink() ? "symlink" : st.isDirectory() ? "folder" : st.isFile() ? "file" : "other";
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === "ENOENT") return "missing";
        throw err;
      }
    },
    async mkdirp(dir, mode) {
      await fs.mkdir(dir, { recursive: true, mode });
    },
    async writeExclusive(p, bytes, mode) {
      const h = await fs.open(p, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, mode);
      try {
        await h.writeFile(bytes);
        await h.sync();
      } finally {
        await h.close();
      }
    },
    rename: (from, to) => fs.rename(from, to),
    remove: (p) => fs.rm(p, { force: true }),
  };
}
