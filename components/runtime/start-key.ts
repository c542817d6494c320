import * as pulumi from "@pulumi/pulumi";
import { sha256Json } from "../../lib/digest";

/**
 * A digest of a remote command's triggers: what, when it changes, replaces the command and so starts a new
 * process. While it stands, any other change to the command (a re-pinned host key in its connection) only
 * runs its start again, which adopts the process it started before and prints the same identity; the
 * providers that take that identity use the key to tell the two apart in a preview, which cannot know what
 * the command will print (dynamic-providers/diff.ts, heldWhileStartStands).
 */
export function startKeyOf(triggers: ReadonlyArray<pulumi.Input<unknown>>): pulumi.Output<string> {
  return pulumi.all([...triggers]).apply((values) => sha256Json(values));
}
