/** Profile store rows as narwhal writes them, for the adoption tests. */

/** A row as narwhal's ProfileStore writes it: every field, unset ones null. */
export function narwhalRow(iid: string, generation: string): Record<string, unknown> {
  return {
    iid,
    ttft_a: 1e-8,
    ttft_b: 3e-5,
    ttft_c: 0.01,
    tpot_slope: 1.5e-6,
    tpot_intercept: 0.006,
    generation_digest: generation,
    kv_capacity_tokens: null,
    tpot_request_slope: 0.001,
    decode_min_requests: 1,
    decode_max_requests: 8,
    decode_min_kv_tokens: 265,
    decode_max_kv_tokens: 8359,
    decode_fit_mape: 0.013,
    decode_cv_mape: 0.026,
    prefill_min_tokens: 256,
    prefill_max_tokens: 2048,
    decode_min_output_tokens: 1,
    decode_max_output_tokens: 45,
    colocated_group: null,
    ttft_block_tokens: null,
    ttft_split: null,
    cached_ttft_a: null,
  };
}
