/** Server-sent events as an engine streams them: `data: <json>` blocks, ended by `data: [DONE]`. */
export type SseEvent = { done: true } | { done: false; data: unknown } | { done: false; malformed: string };

/** Splits a byte stream's text into events; feed chunks in order, each call returns the events it completed. */
export class SseSplitter {
  private buffer = "";

  feed(text: string): SseEvent[] {
    this.buffer += text.replace(/\r\n/g, "\n");
    const events: SseEvent[] = [];
    let cut: number;
    while ((cut = this.buffer.indexOf("\n\n")) >= 0) {
      const block = this.buffer.slice(0, cut);
      this.buffer = this.buffer.slice(cut + 2);
      const data = block
        .split("\n")
        .filter((l) => l.startsWith("data:"))
        .map((l) => l.slice(5).replace(/^ /, ""))
        .join("\n");
      if (!data) continue;
      if (data === "[DONE]") {
        events.push({ done: true });
        continue;
      }
      try {
        events.push({ done: false, data: JSON.parse(data) as unknown });
      } catch {
        events.push({ done: false, malformed: data.slice(0, 200) });
      }
    }
    return events;
  }
}

/** The events of a streamed body, in order, decoded as UTF-8 across chunk boundaries. */
export async function* sseEvents(body: AsyncIterable<Uint8Array>): AsyncGenerator<SseEvent> {
  const split = new SseSplitter();
  const utf8 = new TextDecoder();
  for await (const bytes of body) yield* split.feed(utf8.decode(bytes, { stream: true }));
}

/** Tokens one completion chunk carries: its token ids where the engine returns them, else one per non-empty text. */
export function streamedTokens(chunk: { choices?: Array<{ text?: string; token_ids?: number[] }> }): number {
  return (chunk.choices ?? []).reduce((n, c) => n + (Array.isArray(c.token_ids) ? c.token_ids.length : c.text ? 1 : 0), 0);
}
