"""A decoder-only transformer's shape: the widths that decide every GEMM of its forward step.

One description for the built-in table and for a Hugging Face ``config.json``
(hf_config.py), so both go through the same step builder (forward.py). Dense
Llama/Qwen layers, mixture-of-experts MLPs (Qwen-MoE, DeepSeek), and
DeepSeek's multi-head latent attention are covered.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Experts:
    """A mixture-of-experts MLP: ``routed`` experts, ``per_token`` of them chosen per token."""

    routed: int
    per_token: int
    intermediate: int  # one routed expert's intermediate width
    layers: tuple[int, ...]  # indices of the layers whose MLP is this one
    shared_intermediate: int = 0  # all shared experts together; 0: none
    shared_gate: bool = False  # a sigmoid gate (hidden -> 1) on the shared expert (Qwen2-MoE)


@dataclass(frozen=True)
class LatentAttention:
    """DeepSeek's multi-head latent attention (MLA): low-rank Q and a compressed KV cache."""

    q_lora_rank: int  # 0: Q is one projection from the hidden state
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int

    @property
    def qk_head_dim(self) -> int:
        return self.qk_nope_head_dim + self.qk_rope_head_dim


@dataclass(frozen=True)
class Architecture:
    """The widths of a decoder: attention, MLP (dense and/or experts), vocabulary."""

    name: str
    hidden: int
    intermediate: int  # the dense MLP's width (unused when every layer has experts)
    layers: int
    q_heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    experts: Experts | None = None
    mla: LatentAttention | None = None
    # Sliding-window attention (Gemma 2/3, gpt-oss, Mistral v0.1, Phi-3): ``sliding_layers``
    # of the layers attend to the last ``sliding_window`` keys only, the rest to all.
    sliding_window: int | None = None
    sliding_layers: int = 0
    # Norms beyond the Llama layout's two per layer: Gemma 2/3 also norm the attention
    # and MLP outputs (``post_norms``); Qwen3 and Gemma 3 norm each Q and K head
    # over head_dim before rotary (``qk_norm``).
    post_norms: bool = False
    qk_norm: bool = False

    def __post_init__(self) -> None:
        if not 0 <= self.sliding_layers <= self.layers:
            raise ValueError(f"sliding_layers: expected 0 to {self.layers}, "
                             f"got {self.sliding_layers}")
        if self.sliding_layers and (self.sliding_window is None or self.sliding_window < 1):
            raise ValueError("sliding_window: expected a positive window for the "
                             f"{self.sliding_layers} sliding layers, got {self.sliding_window}")

    def attention_spans(self, seq_len: int) -> tuple[tuple[int | None, int], ...]:
        """(window, layers) per kind of attention layer at ``seq_len`` keys: None for the
        layers that see every key. A window at least ``seq_len`` long sees every key too,
        so such layers join the full ones: the kernel cannot tell them apart."""
        window = self.sliding_window if self.sliding_layers else None
        if window is None or window >= seq_len:
            return ((None, self.layers),)
        full = self.layers - self.sliding_layers
        return tuple((w, n) for w, n in ((None, full), (window, self.sliding_layers)) if n)

    @property
    def moe_layers(self) -> int:
        return 0 if self.experts is None else len(self.experts.layers)

    @property
    def dense_layers(self) -> int:
        return self.layers - self.moe_layers


def from_table(name: str, table: dict[str, int]) -> Architecture:
    """A dense model of the built-in table (``models.MODELS``)."""
    return Architecture(
        name=name, hidden=table["hidden"], intermediate=table["intermediate"],
        layers=table["layers"], q_heads=table["q_heads"], kv_heads=table["kv_heads"],
        head_dim=table["head_dim"], vocab=table["vocab"],
    )
