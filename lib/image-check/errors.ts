/**
 * The one error the image check throws; `code` says which way it failed.
 *
 * - `NARWHAL_IMAGE_CHECK_INPUT`: the check's inputs are unusable (named field), found before any login.
 * - `NARWHAL_IMAGE_CHECK_FAILED`: the runtime failed an identity, package, connector, DS-layout,
 *   custom-code or tokenizer check; the message names each, the check log keeps the output.
 * - `NARWHAL_IMAGE_CHECK_LOG`: the check log could not be appended to (never replaced).
 *
 * Match on `code`, not `instanceof`: each serialized dynamic provider may carry its own copy of lib/.
 */
export type ImageCheckErrorCode = "NARWHAL_IMAGE_CHECK_INPUT" | "NARWHAL_IMAGE_CHECK_FAILED" | "NARWHAL_IMAGE_CHECK_LOG";

export class ImageCheckError extends Error {
  constructor(
    readonly code: ImageCheckErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "ImageCheckError";
  }
}
