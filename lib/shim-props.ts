/**
 * The props every dynamic resource carries for its provider shim (dynamic-providers/shim.ts), beside its
 * inputs: `__provider`, the shim's serialised text; `__implementation`, the provider module the one
 * shared shim loads for it; and, when the stack's `evidence.store` is not the default folder,
 * `__evidenceStore`, where the provider keeps and checks its evidence. None is an input of a measurement:
 * a change of any changes no resource.
 */
export const SHIM_TEXT = "__provider";
export const IMPLEMENTATION = "__implementation";
export const EVIDENCE_STORE = "__evidenceStore";

/** `props` without the shim's own props. */
export function withoutShimProps<T>(props: T): T {
  if (!props || typeof props !== "object") return props;
  const { [SHIM_TEXT]: _text, [IMPLEMENTATION]: _module, [EVIDENCE_STORE]: _store, ...rest } = props as Record<string, unknown>;
  return rest as T;
}
