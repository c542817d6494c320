import type * as command from "@pulumi/command";
import type * as pulumi from "@pulumi/pulumi";
import { sha256Json } from "../../lib/digest";

/**
 * A digest of a remote command's triggers: what, when it changes, replaces the command and so starts a new
 * process. While it stands, any other change to the command (a re-pinned host key in its connection) only
 * runs its start again, which adopts the process it started before and prints the same identity; the
 * providers that take that identity use the key to tell the two apart in a preview, which cannot know what
 * the command will print (lib/evidence/diff.ts, heldWhileStartStands).
 *
 * It is read from the command's own `triggers` output, not from the values handed to it: a preview can see
 * a value as known in the program (the last state of a resource it is about to replace) that the engine
 * counts as unknown for the command, and then the command is replaced. Its output is unknown exactly when
 * the engine replaces it, so the key is too.
 */
export function startKeyOf(cmd: command.remote.Command): pulumi.Output<string> {
  return cmd.triggers.apply((values) => sha256Json(values ?? []));
}
