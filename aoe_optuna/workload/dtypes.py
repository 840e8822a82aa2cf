"""Element type names as users and tools spell them, mapped to the profile's names.

Shape lists say ``fp16`` or ``float16``; msprof says ``FLOAT16``, ``DT_BF16``,
``FLOAT`` (fp32) or ``INT8`` (GE's DataType names; see docs/WORKLOADS.md).
"""

from __future__ import annotations

_ALIASES = {
    "FP16": "fp16", "FLOAT16": "fp16", "HALF": "fp16", "F16": "fp16",
    "BF16": "bf16", "BFLOAT16": "bf16",
    "FP32": "fp32", "FLOAT32": "fp32", "FLOAT": "fp32", "F32": "fp32",
    "INT8": "int8", "I8": "int8",
}
# Types a MatMul of a real model may carry that no kernel of this project runs.
KNOWN_UNTUNED = ("INT4", "UINT8", "INT32", "HIFLOAT8", "FLOAT8_E4M3FN", "FLOAT8_E5M2",
                 "FLOAT4_E2M1", "FLOAT4_E1M2", "HIFLOAT4", "FLOAT8_E8M0", "INT16", "INT64",
                 "DOUBLE", "UINT32", "UINT64", "BOOL")


def dtype_name(text: str) -> str | None:
    """``fp16``/``bf16``/``fp32``/``int8`` for a spelling of one, else None."""
    key = text.strip().upper().replace("TORCH.", "")
    key = key[3:] if key.startswith("DT_") else key
    return _ALIASES.get(key)


def is_known_untuned(text: str) -> bool:
    """Whether ``text`` names a real element type that the kernels here do not take."""
    key = text.strip().upper()
    key = key[3:] if key.startswith("DT_") else key
    return key in KNOWN_UNTUNED


ACCEPTED = "fp16, bf16, fp32 or int8 (also float16, bfloat16, float32, FLOAT, DT_BF16, ...)"
