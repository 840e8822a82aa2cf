"""The tunable parameters a GEMM kernel knows, and how their values are written.

A config travels in three forms:

* a *config*: ``{"tile_m": 128, "pipeline": 2, "layout": "z_major", ...}``, the
  form users, Optuna trials and exported kernels see;
* *indices*: one int per parameter, the position of the value in the
  parameter's choices (the compact form for enumeration and samplers);
* *columns*: ``{name: np.ndarray}`` of numeric codes, one row per config, the
  form the constraint evaluator and the simulator compute on. Integers are
  their value, booleans 0/1, ``pipeline`` 0/1/2, ``opt_level`` 0..3 and
  unordered names the index of the name in their choice list.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

Kind = Literal["int", "real", "ordinal", "bool", "categorical"]

PIPELINE_NAMES = ("none", "single_buffer", "double_buffer")
OPT_LEVELS = ("O0", "O1", "O2", "O3")
SCHEDULES = ("default", "balanced", "throughput", "latency")
LAYOUTS = ("row_major", "col_major", "z_major")
OPERAND_LAYOUTS = ("row_major", "col_major", "zN")  # one operand's GM layout (catlass layout::)
TILE_NAMES = ("tile_m", "tile_k", "tile_n")  # the GEMM tile's M, K and N sizes


@dataclass(frozen=True)
class ParamInfo:
    """What the engine knows about one tunable: its kind and default."""

    kind: Kind
    default: Any
    doc: str
    names: tuple[str, ...] | None = None  # allowed names for ordinal/categorical


KNOWN_PARAMS: dict[str, ParamInfo] = {
    "tile_m": ParamInfo("int", 128, "rows of C per block (baseM), multiple of 16"),
    "tile_k": ParamInfo("int", 64, "depth of one MMAD block (baseK), multiple of C0"),
    "tile_n": ParamInfo("int", 256, "columns of C per block (baseN), multiple of 16"),
    "pipeline": ParamInfo(
        "ordinal", 2, "0 none (pipes serialised), 1 single buffer, 2 double buffer (L0 ping-pong)",
        PIPELINE_NAMES,
    ),
    "l1_prefetch": ParamInfo("bool", 1, "prefetch the next L1 block while computing this one"),
    "output_align": ParamInfo("bool", 1, "pad C rows to 512 B for aligned write-back"),
    "opt_level": ParamInfo("ordinal", "O2", "compiler optimisation level", OPT_LEVELS),
    "schedule": ParamInfo("categorical", "default", "instruction scheduling policy", SCHEDULES),
    "unroll_factor": ParamInfo("int", 0, "unroll of the inner K loop (0: compiler's choice)"),
    "layout": ParamInfo("categorical", "row_major", "GM layout of A and B", LAYOUTS),
    "quantization": ParamInfo("bool", False, "int8 weights and activations instead of the dtype"),
    # The knobs of Huawei's catlass GEMM templates (docs/SIMULATOR.md, "The catlass space").
    "l1_k": ParamInfo(
        "int", 0, "K depth of the L1 tile (catlass L1TileShape::K), a multiple of tile_k; "
        "0: tile_k x the SoC profile's l1_k_steps",
    ),
    "swizzle_offset": ParamInfo(
        "int", 3, "blocks per swizzle group (catlass GemmIdentityBlockSwizzle<Offset, _>)",
    ),
    "swizzle_direction": ParamInfo(
        "int", 0, "0: groups of block rows walked along N (Zn), 1: groups of block columns "
        "walked along M (Nz) (GemmIdentityBlockSwizzle<_, Direction>)",
    ),
    "preload": ParamInfo(
        "bool", 0, "load the next block's first L1 tile during this block's tail "
        "(catlass MmadAtlasA2Preload instead of MmadAtlasA2Pingpong)",
    ),
    "unit_flag": ParamInfo(
        "bool", 0, "FixPipe drains L0C while the last MMADs run (catlass ENABLE_UNIT_FLAG)",
    ),
    "split_k": ParamInfo(
        "int", 1, "K split across cores, fp32 partials summed on the vector cores "
        "(catlass SplitkMatmul); 1: no split",
    ),
    "padding": ParamInfo(
        "bool", 0, "copy A and B to 512 B-aligned rows on the vector cores first "
        "(catlass PaddingMatmul)",
    ),
    "layout_a": ParamInfo("categorical", "row_major", "GM layout of A (overrides layout)",
                          OPERAND_LAYOUTS),
    "layout_b": ParamInfo("categorical", "row_major", "GM layout of B (overrides layout)",
                          OPERAND_LAYOUTS),
}


class ParamError(ValueError):
    """A value that does not fit a parameter; the message says what was expected."""

    @property
    def expected(self) -> str:
        """What the parameter takes, without its name or the value given: the message
        says 'pipeline takes 0/1/2 or ..., got 'x''; a reader that names the key and
        the value itself keeps this part."""
        text = str(self)
        _, sep, rest = text.partition(" takes ")
        return rest.rsplit(", got ", 1)[0] if sep else text


@dataclass(frozen=True)
class Param:
    """One parameter of a search space: a name, a kind and an ordered tuple of choices.

    Known GEMM tunables (:data:`KNOWN_PARAMS`) get their kind from the table;
    other names (a recorded Kernel Tuner space, a plain Optuna study) get one
    inferred from their values with :meth:`generic`.
    """

    name: str
    choices: tuple[Any, ...]
    kind: Kind = "int"

    @classmethod
    def known(cls, name: str, values: Any) -> Param:
        """A GEMM tunable, its values spelled canonically (names or codes accepted)."""
        info = KNOWN_PARAMS.get(name)
        if info is None:
            raise ParamError(f"unknown parameter {name!r}; known: {', '.join(KNOWN_PARAMS)}")
        return cls(name, tuple(canonical_value(name, v) for v in values), info.kind)

    @classmethod
    def generic(cls, name: str, values: Any) -> Param:
        """Any parameter: ints stay ints, floats are real, anything else a category."""
        values = tuple(values)
        if all(isinstance(v, bool) for v in values):
            return cls(name, values, "bool")
        if all(_is_integral(v) and not isinstance(v, bool) for v in values):
            return cls(name, tuple(int(v) for v in values), "int")
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            return cls(name, tuple(float(v) for v in values), "real")
        return cls(name, values, "categorical")

    @property
    def codes(self) -> np.ndarray:
        """Numeric code of each choice (see the module docstring)."""
        if self.kind == "real":
            return np.array(self.choices, dtype=float)
        return np.array([self.code(v) for v in self.choices], dtype=np.int64)

    @property
    def spelled_canonically(self) -> bool:
        """Whether this is a GEMM tunable whose values have canonical spellings."""
        return self.name in KNOWN_PARAMS and self.kind == KNOWN_PARAMS[self.name].kind

    def code(self, value: Any) -> int | float:
        """Numeric code of one choice."""
        if self.spelled_canonically:
            return to_code(self.name, value)
        if self.kind in ("int", "real"):
            return value
        if self.kind == "bool":
            return int(bool(value))
        return self.choices.index(value)

    def index(self, value: Any) -> int:
        """Position of ``value`` among the choices (names and codes both accepted)."""
        canon = canonical_value(self.name, value) if self.spelled_canonically else value
        try:
            return self.choices.index(canon)
        except ValueError:
            raise ParamError(
                f"{self.name}={value!r} is not one of its choices {list(self.choices)}"
            ) from None

    @property
    def is_log_scaled(self) -> bool:
        """Sizes that grow by ratios (tile sizes) are encoded on a log2 axis."""
        if self.kind not in ("int", "real") or len(self.choices) < 2:
            return False
        lo, hi = min(self.choices), max(self.choices)
        return lo > 0 and hi / lo >= 4


def canonical_value(name: str, value: Any) -> Any:
    """The one spelling of ``value`` the engine stores for parameter ``name``.

    ``pipeline`` accepts 0/1/2 or its names and is stored as an int;
    ``opt_level`` accepts "O2", "o2", 2 and is stored as "O2"; booleans accept
    0/1/true/false and are stored as int 0/1 except ``quantization`` (bool).
    """
    info = KNOWN_PARAMS.get(name)
    if info is None:
        raise ParamError(f"unknown parameter {name!r}; known: {', '.join(KNOWN_PARAMS)}")
    if info.kind == "int":
        if isinstance(value, bool) or not _is_integral(value):
            raise ParamError(f"{name} takes integers, got {value!r}")
        return int(value)
    if info.kind == "bool":
        if isinstance(value, bool) or (_is_integral(value) and int(value) in (0, 1)):
            return bool(value) if name == "quantization" else int(value)
        if isinstance(value, str) and value.lower() in ("true", "false"):
            flag = value.lower() == "true"
            return flag if name == "quantization" else int(flag)
        raise ParamError(f"{name} takes 0/1 or true/false, got {value!r}")
    names = info.names or ()
    if name == "pipeline":
        if isinstance(value, str) and value in names:
            return names.index(value)
        if not isinstance(value, bool) and _is_integral(value) and 0 <= int(value) < len(names):
            return int(value)
        raise ParamError(f"pipeline takes 0/1/2 or one of {list(names)}, got {value!r}")
    if name == "opt_level":
        if not isinstance(value, bool) and _is_integral(value) and 0 <= int(value) <= 3:
            return f"O{int(value)}"
        if isinstance(value, str) and value.upper() in names:
            return value.upper()
        raise ParamError(f"opt_level takes one of {list(names)}, got {value!r}")
    if isinstance(value, str) and value in names:
        return value
    raise ParamError(f"{name} takes one of {list(names)}, got {value!r}")


def to_code(name: str, value: Any) -> int:
    """Numeric code of a canonical value, as used in columns and expressions."""
    info = KNOWN_PARAMS[name]
    value = canonical_value(name, value)
    if info.kind in ("int", "bool"):
        return int(value)
    if name == "pipeline":
        return int(value)
    assert info.names is not None
    return info.names.index(value)


def from_code(name: str, code: int) -> Any:
    """Inverse of :func:`to_code`."""
    info = KNOWN_PARAMS[name]
    if info.kind == "int":
        return int(code)
    if info.kind == "bool":
        return bool(code) if name == "quantization" else int(code)
    if name == "pipeline":
        return int(code)
    assert info.names is not None
    return info.names[int(code)]


def default_config() -> dict[str, Any]:
    """Every known parameter at its default, for parameters a study does not tune."""
    return {name: canonical_value(name, info.default) for name, info in KNOWN_PARAMS.items()}


def _is_integral(value: Any) -> bool:
    if isinstance(value, (int, np.integer)):
        return True
    return isinstance(value, float) and value.is_integer()
