/** {@link FileTarget} over SFTP on an open SSH session: no shell, no quoting, lstat never follows a link. */
import type { SFTPWrapper } from "ssh2";
import type { EntryKind, FileTarget } from "../profiling";
import type { SshSession } from "./client";

const call = <T>(fn: (cb: (err: Error | null | undefined, value?: T) => void) => void): Promise<T> =>
  new Promise((resolve, reject) => fn((err, value) => (err ? reject(err) : resolve(value as T))));

export async function sftpTarget(session: SshSession): Promise<FileTarget & { close(): void }> {
  const sftp: SFTPWrapper = await session.sftp();
  const label = `router host ${session.target.alias}`;
  const lstat = async (p: string): Promise<EntryKind> => {
    try {
      const st = await call<import("ssh2").Stats>((cb) => sftp.lstat(p, cb));
      return st.isSymbolicLink() ? "symlink" : st.isDirectory() ? "folder" : st.isFile() ? "file" : "other";
    } catch (err) {
      if ((err as { code?: number }).code === 2) return "missing";
      throw err;
    }
  };
  return {
    label,
    lstat,
    async mkdirp(dir, mode) {
      const parts = dir.split("/").filter(Boolean);
      for (let i = 1; i <= parts.length; i++) {
        const p = "/" + parts.slice(0, i).join("/");
        if ((await lstat(p)) === "missing") await call<void>((cb) => sftp.mkdir(p, { mode }, cb));
      }
    },
    async writeExclusive(p, bytes, mode) {
      // "wx": O_CREAT|O_EXCL, so an existing file or link at the temporary name is never written through.
      const handle = await call<Buffer>((cb) => sftp.open(p, "wx", { mode }, cb));
      try {
        await call<void>((cb) => sftp.write(handle, bytes, 0, bytes.length, 0, cb));
        await call<void>((cb) => sftp.fsetstat(handle, { mode }, cb));
      } finally {
        await call<void>((cb) => sftp.close(handle, cb));
      }
    },
    // OpenSSH's posix-rename replaces the destination in one step (plain SFTP rename refuses an existing one).
    rename: (from, to) => call<void>((cb) => sftp.ext_openssh_rename(from, to, cb)),
    remove: (p) => call<void>((cb) => sftp.unlink(p, cb)),
    close: () => sftp.end(),
  };
}
