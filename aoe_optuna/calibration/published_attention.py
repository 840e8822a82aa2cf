"""Published 910B2 fused-attention timings the prefill attention model is checked against.

Nothing here sets a constant of the model: these figures only check it.
They are torch_npu ``npu_fused_infer_attention_score`` (CANN's fused
attention, BSH layout, one head of 128, batch 1, no mask, fp16), timed with
NPU events around 50 back-to-back eager calls after 10 warm-up calls, on two
hosts. Back-to-back eager calls overlap host dispatch with the kernels, so a
figure is the longer of the kernel and the host's per-call dispatch: the
small shapes sit on a plateau (about 70 us on the aarch64 host, 47 us on the
x86 host) that is the host, not the kernel. The model predicts the kernel
alone, so it must stay at or under every figure, and the shapes that rise
off the plateau carry the kernel's time.

The same README times the PTO flash kernel of that demo (``jit_flash``):
one 128-row Q block per AI core, so its S_q = 128 rows are one unit on one
core, the per-core rate this model's stages add up to. Its host floor is
lower (about 17-19 us), and a rise over S_kv = 1024 on the same host is
kernel time.
"""

from __future__ import annotations

from dataclasses import dataclass

PTO_ISA_FLASH = ("cannmirror/pto-isa demos/torch_jit/flash_atten/README.md"
                 "@1fb190ca0b246578c198218752e1981b5766e023 (bench: fa_benchmark.py)")


@dataclass(frozen=True)
class PublishedAttention:
    """One published fused-attention timing: query and key lengths, host, microseconds."""

    seq_q: int
    seq_kv: int
    host: str
    time_us: float
    source: str = PTO_ISA_FLASH
    batch: int = 1
    heads: int = 1
    head_dim: int = 128
    causal: bool = False
    kernel: str = "npu_fused_infer_attention_score"


_FUSED_US = {  # (seq_q, seq_kv): (aarch64 host, x86_64 host), "Fused us" columns
    (128, 1024): (70.338, 46.83), (128, 2048): (70.898, 48.20),
    (128, 4096): (72.652, 47.93), (128, 8192): (73.365, 52.58),
    (256, 1024): (72.522, 48.41), (256, 2048): (73.369, 50.13),
    (256, 4096): (74.567, 49.19), (256, 8192): (73.150, 68.99),
    (512, 1024): (71.964, 52.50), (512, 2048): (74.180, 53.62),
    (512, 4096): (73.984, 61.27), (512, 8192): (75.936, 88.09),
    (1024, 1024): (74.404, 55.40), (1024, 2048): (73.102, 61.38),
    (1024, 4096): (75.043, 84.73), (1024, 8192): (90.272, 103.27),
    (2048, 1024): (76.777, 63.49), (2048, 2048): (75.535, 84.70),
    (2048, 4096): (91.798, 101.94), (2048, 8192): (126.845, 142.38),
}

PUBLISHED_ATTENTION: tuple[PublishedAttention, ...] = tuple(
    PublishedAttention(sq, sk, host, us)
    for (sq, sk), pair in _FUSED_US.items()
    for host, us in zip(("aarch64", "x86_64"), pair, strict=True)
)

# "JIT us" column, S_q = 128 (one AI core): (aarch64 host, x86_64 host).
_PTO_ONE_CORE_US = {1024: (19.200, 16.54), 2048: (23.420, 23.98),
                    4096: (38.317, 40.94), 8192: (68.778, 72.14)}

PUBLISHED_ONE_CORE: tuple[PublishedAttention, ...] = tuple(
    PublishedAttention(128, sk, host, us, kernel="pto-isa jit_flash")
    for sk, pair in _PTO_ONE_CORE_US.items()
    for host, us in zip(("aarch64", "x86_64"), pair, strict=True)
)
