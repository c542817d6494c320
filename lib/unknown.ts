/**
 * How the engine marks a value that is only known after apply (plugin.UnknownStringValue; @pulumi/pulumi's
 * `runtime.unknownValue`): a preview hands it to dynamic providers, engine events and the policy pack in
 * place of an output the update has yet to produce.
 */
export const UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9";

/** True when a value, or anything inside it, is only known after apply (preview). */
export function hasUnknown(v: unknown): boolean {
  if (v === UNKNOWN) return true;
  if (v && typeof v === "object") return Object.values(v as Record<string, unknown>).some(hasUnknown);
  return false;
}
