/** Why a checkpoint could not be identified; every message names the host and the directory or file. */
export type CheckpointErrorCode =
  | "NARWHAL_CHECKPOINT_MISSING_DIR"
  | "NARWHAL_CHECKPOINT_NOT_A_DIRECTORY"
  | "NARWHAL_CHECKPOINT_UNREADABLE"
  | "NARWHAL_CHECKPOINT_CHANGED"
  | "NARWHAL_CHECKPOINT_NAME"
  | "NARWHAL_CHECKPOINT_TIMEOUT"
  | "NARWHAL_CHECKPOINT_NO_PYTHON"
  | "NARWHAL_CHECKPOINT_SCRIPT";

export class CheckpointError extends Error {
  constructor(
    readonly code: CheckpointErrorCode,
    message: string,
  ) {
    super(message);
  }
}
