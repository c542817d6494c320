/**
 * The props every dynamic resource carries for its provider shim (dynamic-providers/shim.ts), beside its
 * inputs: `__provider`, the shim's serialised text, and `__implementation`, the provider module the one
 * shared shim loads for it. Neither is an input of a measurement: a change of either changes no resource.
 */
export const SHIM_TEXT = "__provider";
export const IMPLEMENTATION = "__implementation";

/** `props` without the shim's own props. */
export function withoutShimProps<T>(props: T): T {
  if (!props || typeof props !== "object") return props;
  const { [SHIM_TEXT]: _text, [IMPLEMENTATION]: _module, ...rest } = props as Record<string, unknown>;
  return rest as T;
}
