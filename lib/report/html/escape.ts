/**
 * Escaping for text and attribute values put into the report. Every string from the evidence store
 * passes through here: a record names hosts, engines and messages that came from remote machines.
 */
const ENTITIES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/** Safe inside element text and inside a double- or single-quoted attribute. */
export function esc(value: unknown): string {
  return String(value).replace(/[&<>"']/g, (c) => ENTITIES[c]);
}
