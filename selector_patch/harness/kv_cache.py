"""The `inference_params` of a scenario's KV cache, as TE's `InferenceParams` holds them.

TE 2.2+ pass the caller's `InferenceParams` to the selector, which reads whether the cache is
paged and its page geometry (`is_paged`, `page_size`, `total_num_pages`,
`cache_manager.max_pages_per_seq`). The release's own class cannot be built here: its
constructor allocates CUDA tensors for the sequence bookkeeping. The object is built with the
attributes that constructor sets from the same arguments a caller passes (one sequence of
`max_seqlen_kv` per batch entry, pages covering them), and nothing else, so a selector that
reads further attributes fails loudly instead of reading a made-up value.
"""

from __future__ import annotations

import types

from selector_patch.scenario import KV_CACHES


def inference_params(
    kind: str,
    *,
    max_batch_size: int,
    max_sequence_length: int,
    num_heads_kv: int,
    head_dim_k: int,
    head_dim_v: int,
    dtype: object,
    page_size: int,
    qkv_format: str,
) -> types.SimpleNamespace:
    """`InferenceParams(max_batch_size, max_sequence_length, ..., is_paged=kind == "paged")`."""
    if kind not in KV_CACHES:
        raise ValueError(f"kv_cache={kind!r}: not one of {', '.join(KV_CACHES)}")
    held = dict(
        max_batch_size=max_batch_size,
        max_sequence_length=max_sequence_length,
        num_heads_kv=num_heads_kv,
        head_dim_k=head_dim_k,
        head_dim_v=head_dim_v,
        dtype=dtype,
        is_paged=kind == "paged",
        input_qkv_format=qkv_format,
        cache_qkv_format="bshd",
        output_qkv_format=qkv_format if qkv_format == "bshd" else f"{qkv_format}_2bshd",
    )
    if kind == "paged":
        if max_sequence_length % page_size:
            raise ValueError(
                f"kv_page_size={page_size} does not divide max_seqlen_kv={max_sequence_length}"
            )
        pages_per_sequence = max_sequence_length // page_size
        held.update(
            page_size=page_size,
            total_num_pages=max_batch_size * pages_per_sequence,
            cache_manager=types.SimpleNamespace(max_pages_per_seq=pages_per_sequence),
        )
    return types.SimpleNamespace(**held)
