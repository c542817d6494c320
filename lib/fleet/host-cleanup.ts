/**
 * What `pulumi destroy` removes from a host: the stack's folder under `stateDir`, where every engine,
 * sidecar, the router, its install and monitoring keep their files. Host discovery owns that folder,
 * because everything that logs in to the host depends on discovery's verified key and is therefore
 * deleted before it.
 *
 * A discovery that is replaced (a moved facet, a re-pinned key) is deleted too, after its successor was
 * created, while the engines keep running: so each discovery writes a claim token into the folder, and
 * a delete removes the folder only while the claim is still its own.
 */
import { shq } from "../shell";
import { isStackFolderName } from "../stack-name";

/** The claim file, inside the stack's folder. */
export const CLAIM_FILE = ".discovery-claim";

/** `<stateDir>/<stack>`, refusing anything that could name a folder other than the stack's own. */
export function stackFolder(stateDir: string, stack: string): string {
  if (!stateDir.startsWith("/") || !isStackFolderName(stack)) {
    throw new Error(`refusing to clean ${JSON.stringify(stateDir)} / ${JSON.stringify(stack)}: not an absolute stateDir and a plain stack name`);
  }
  return `${stateDir.replace(/\/+$/, "")}/${stack}`;
}

/** Makes the folder (0700) and records `token` as the discovery that owns it now. */
export function claimScript(folder: string, token: string): string {
  return `umask 077 && mkdir -p ${shq(folder)} && printf %s ${shq(token)} > ${shq(`${folder}/${CLAIM_FILE}`)}`;
}

/**
 * Removes the folder when `token` still holds the claim (and `retain` is false). Prints one word, what
 * it did, so the provider can say so: `removed`, `retained`, `superseded` (a newer discovery owns it) or
 * `absent`.
 */
export function cleanupScript(folder: string, token: string, retain: boolean): string {
  const claim = shq(`${folder}/${CLAIM_FILE}`);
  return [
    `if [ ! -d ${shq(folder)} ]; then echo absent`,
    `elif [ "$(cat ${claim} 2>/dev/null)" != ${shq(token)} ]; then echo superseded`,
    retain ? `else rm -f ${claim} && echo retained` : `else rm -rf -- ${shq(folder)} && echo removed`,
    `fi`,
  ].join("; ");
}
