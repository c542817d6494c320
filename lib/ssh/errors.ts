/** The one error the SSH layer throws: its code says which step failed, its message names the host and the fix. */
export class SshError extends Error {
  constructor(
    readonly code: "NARWHAL_SSH_HOST_KEY" | "NARWHAL_SSH_CONNECT" | "NARWHAL_SSH_TIMEOUT" | "NARWHAL_SSH_EXEC" | "NARWHAL_SSH_LOST",
    message: string,
    /** A remote command's exit status, when that is what failed (`run`). */
    readonly exitStatus?: number,
  ) {
    super(message);
  }
}
