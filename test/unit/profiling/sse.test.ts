import { expect } from "chai";
import { sseEvents, streamedTokens, type SseEvent } from "../../../lib/profiling/sse";

async function* chunks(...parts: Uint8Array[]): AsyncGenerator<Uint8Array> {
  for (const p of parts) yield p;
}

async function collect(body: AsyncIterable<Uint8Array>): Promise<SseEvent[]> {
  const out: SseEvent[] = [];
  for await (const e of sseEvents(body)) out.push(e);
  return out;
}

describe("profiling: streamed events", () => {
  it("joins events and multi-byte characters split across chunks, and ends at [DONE]", async () => {
    const bytes = Buffer.from('data: {"choices":[{"text":"é"}]}\r\n\r\ndata: not json\n\ndata: [DONE]\n\n');
    const cut = bytes.indexOf(0xc3) + 1; // inside the two bytes of "é"
    expect(await collect(chunks(bytes.subarray(0, cut), bytes.subarray(cut, cut + 9), bytes.subarray(cut + 9)))).to.deep.equal([
      { done: false, data: { choices: [{ text: "é" }] } },
      { done: false, malformed: "not json" },
      { done: true },
    ]);
  });

  it("counts a chunk's token ids where the engine returns them, else one per non-empty text", () => {
    expect(streamedTokens({ choices: [{ text: "ab", token_ids: [1, 2, 3] }, { text: "c" }, { text: "" }] })).to.equal(4);
    expect(streamedTokens({})).to.equal(0);
  });
});
