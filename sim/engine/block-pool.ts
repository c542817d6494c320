/**
 * The engine's KV block pool: `num_gpu_blocks` ids, handed out one block at a time as sequences grow.
 *
 * Admission works on reservations (a sequence reserves room for its prompt plus max_tokens before it
 * runs), while allocation follows the tokens actually held. That keeps `vllm:kv_cache_usage_perc`
 * honest without simulating vLLM's preemption: a running sequence can always grow into its reservation.
 */
export class BlockPool {
  private nextFresh = 0;
  private readonly freed: number[] = [];
  private reserved = 0;
  private allocated = 0;

  constructor(readonly total: number) {}

  canReserve(n: number): boolean {
    return this.reserved + n <= this.total;
  }

  reserve(n: number): void {
    if (!this.canReserve(n)) throw new Error(`cannot reserve ${n} blocks: ${this.reserved}/${this.total} reserved`);
    this.reserved += n;
  }

  unreserve(n: number): void {
    this.reserved -= n;
  }

  /** Hands out n block ids; callers stay within their reservation, so this cannot run dry. */
  alloc(n: number): number[] {
    const ids: number[] = [];
    for (let i = 0; i < n; i++) {
      const id = this.freed.pop() ?? this.nextFresh++;
      if (id >= this.total) throw new Error("KV block pool exhausted");
      ids.push(id);
    }
    this.allocated += n;
    return ids;
  }

  free(ids: readonly number[]): void {
    this.freed.push(...ids);
    this.allocated -= ids.length;
  }

  /** Fraction of blocks holding KV (vllm:kv_cache_usage_perc, 0..1). */
  get usage(): number {
    return this.total === 0 ? 0 : this.allocated / this.total;
  }

  get allocatedBlocks(): number {
    return this.allocated;
  }
}
