"""The ``search_space``, ``constraints`` and ``baseline`` sections of a study spec.

Turns them into one :class:`~aoe_optuna.space.search_space.SearchSpace` (spec expressions
plus, for Ascend studies, the hardware capacity rules) and a canonical
baseline config, or raises a :class:`~aoe_optuna.spec.format.SpecError` that
names the offending key.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from aoe_optuna.space.constraints import ConstraintError, ExpressionRule, Rule, compile_expression
from aoe_optuna.space.kernel_rule import KernelRule
from aoe_optuna.space.params import KNOWN_PARAMS, Param, ParamError, canonical_value, default_config
from aoe_optuna.space.search_space import SearchSpace
from aoe_optuna.spec.format import Section, SpecError, describe, nearest

# The space a spec gets when it has no search_space section: AOE's seed space
# with the tile sizes at every multiple of 16 up to 256 (49,152 points).
SEED_SPACE: dict[str, Any] = {
    "tile_m": {"low": 16, "high": 256, "step": 16},
    "tile_k": {"low": 16, "high": 256, "step": 16},
    "tile_n": {"low": 16, "high": 256, "step": 16},
    "pipeline": [0, 1, 2],
    "l1_prefetch": [0, 1],
    "output_align": [0, 1],
}

# Sane value ranges of integer tunables (a tile of 0 or 10^6 is a typo).
INT_BOUNDS: dict[str, tuple[int, int]] = {
    "tile_m": (1, 4096),
    "tile_k": (1, 4096),
    "tile_n": (1, 4096),
    "unroll_factor": (0, 1024),
    "l1_k": (0, 16384),
    "swizzle_offset": (1, 64),
    "swizzle_direction": (0, 1),
    "split_k": (1, 256),
}
MAX_CHOICES = 4096  # per parameter
MAX_CORE_CONFIGS = 20_000_000  # constrained configs counted when the spec loads (a few seconds)
MAX_SPACE_SIZE = 10**15


def parse_params(section: Section) -> list[Param]:
    """One :class:`Param` per entry of ``search_space``, in document order."""
    if not section.data:
        raise section.error(None, "at least one parameter", raw="an empty object")
    params = []
    for name, value in section.data.items():
        if name not in KNOWN_PARAMS:
            raise section.error(
                str(name), f"a known parameter ({', '.join(KNOWN_PARAMS)})",
                raw=f"an unknown parameter{nearest(str(name), KNOWN_PARAMS)}",
            )
        params.append(Param(name, _choices(section, name, value), KNOWN_PARAMS[name].kind))
    both = [n for n in ("layout_a", "layout_b") if n in section.data]
    if "layout" in section.data and both:
        raise section.error(both[0], "either layout (both operands) or layout_a/layout_b",
                            raw="tuned together with layout")
    return params


def _choices(section: Section, name: str, value: Any) -> tuple[Any, ...]:
    info = KNOWN_PARAMS[name]
    if isinstance(value, Mapping):
        if info.kind != "int":
            raise section.error(name, "a list of choices (ranges are for integer parameters)",
                                value)
        values: list[Any] = _range(Section(section.source, section.path(name), value))
    elif isinstance(value, list):
        if not value:
            raise section.error(name, "a non-empty list of choices", raw="an empty list")
        if len(value) > MAX_CHOICES:
            raise section.error(name, f"at most {MAX_CHOICES} choices", raw=f"{len(value)}")
        values = []
        for i, v in enumerate(value):
            try:
                values.append(canonical_value(name, v))
            except ParamError as exc:
                raise SpecError(section.source, f"{section.path(name)}[{i}]",
                                exc.expected, describe(v)) from None
    else:
        raise section.error(name, 'a list of choices or a range {"low", "high", "step"}', value)
    seen: set[Any] = set()
    for v in values:
        if v in seen:
            raise section.error(name, "distinct choices", raw=f"{v!r} twice in {value!r}")
        seen.add(v)
    if name in INT_BOUNDS:
        lo, hi = INT_BOUNDS[name]
        bad = [v for v in values if not lo <= v <= hi]
        if bad:
            raise section.error(name, f"values from {lo} to {hi}", raw=f"{bad[0]!r}")
    return tuple(values)


def _range(section: Section) -> list[int]:
    """AOE's ``range(low, high + 1, step)``: both ends included, step must divide the span."""
    section.check_keys(("low", "high", "step"))
    for key in ("low", "high"):
        if key not in section.data:
            raise section.error(key, "an integer", raw="nothing")
    low = section.integer("low", 0, -(2**31), 2**31)
    high = section.integer("high", 0, -(2**31), 2**31)
    step = section.integer("step", 1, 1, 2**31)
    if low > high:
        raise section.error("high", f"at least low ({low})", high)
    if (high - low) % step:
        raise section.error(
            "step", f"a step that divides high - low = {high - low}", step
        )
    count = (high - low) // step + 1
    if count > MAX_CHOICES:
        raise section.error(None, f"at most {MAX_CHOICES} values", raw=f"{count:,} values")
    return list(range(low, high + 1, step))


def expression_names(space_params: Sequence[Param], constants: Mapping[str, float]) -> dict:
    """Names a constraint may use: tuned params (None: read from columns) and constants."""
    names: dict[str, float | None] = dict(constants)
    names.update({p.name: None for p in space_params})
    return names


def categories_of(params: Sequence[Param]) -> dict[str, tuple[Any, ...]]:
    """Names of named params, in code order, so ``layout == "z_major"`` compares codes."""
    out: dict[str, tuple[Any, ...]] = {
        name: info.names for name, info in KNOWN_PARAMS.items() if info.names
    }
    for p in params:
        if p.name not in KNOWN_PARAMS and p.kind == "categorical":
            out[p.name] = p.choices
    return out


def parse_constraints(
    source: str, raw: Any, names: Mapping[str, float | None],
    categories: Mapping[str, tuple[Any, ...]],
) -> list[ExpressionRule]:
    """The ``constraints`` list: expression strings, or ``{"name", "expression"}`` objects."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise SpecError(source, "constraints", "a list of expression strings", describe(raw))
    rules = []
    for i, item in enumerate(raw):
        key = f"constraints[{i}]"
        label = None
        if isinstance(item, Mapping):
            entry = Section(source, key, item)
            entry.check_keys(("name", "expression"))
            label = entry.string("name")
            item = entry.string("expression")
            key += ".expression"
        if not isinstance(item, str):
            raise SpecError(source, key, "an expression string", describe(item))
        try:
            rules.append(compile_expression(item, names, categories, name=label))
        except ConstraintError as exc:
            raise SpecError(
                source, key, "an expression of parameters, hardware figures, numbers, "
                "arithmetic, comparisons, and/or/not, min/max",
                f"{describe(item)}: {exc}",
            ) from None
    return rules


def build_space(
    source: str, params: Sequence[Param], rules: Sequence[Rule], has_constraints: bool,
    fixed: Mapping[str, Any] | None = None,
) -> SearchSpace:
    """The SearchSpace, checked for size and for having at least one feasible config."""
    try:
        space = SearchSpace(params, rules, fixed)
    except ParamError as exc:
        raise SpecError(source, "search_space", "a valid space", str(exc)) from None
    if space.size > MAX_SPACE_SIZE:
        raise SpecError(source, "search_space", f"at most {MAX_SPACE_SIZE:.0e} points",
                        f"{space.size:.3g}")
    if space.core_size > MAX_CORE_CONFIGS:
        raise SpecError(
            source, "search_space",
            f"at most {MAX_CORE_CONFIGS:,} combinations of the constrained parameters "
            f"({', '.join(space.names[i] for i in space.core)})",
            f"{space.core_size:,}; narrow their ranges",
        )
    if space.n_feasible == 0:
        _no_kernel_left(source, params, rules, fixed)
        expr = [r for r in rules if isinstance(r, ExpressionRule)]
        hardware_only = SearchSpace(params, [r for r in rules if r not in expr], fixed)
        if has_constraints and hardware_only.n_feasible > 0:
            names = "; ".join(r.text for r in expr)
            raise SpecError(source, "constraints", "constraints that some config satisfies",
                            f"none of the {hardware_only.n_feasible:,} configs the hardware "
                            f"allows satisfies them all ({names})")
        raise SpecError(source, "search_space", "a space with at least one feasible config",
                        f"all {space.size:,} configs break a hardware rule")
    return space


def _no_kernel_left(source: str, params: Sequence[Param], rules: Sequence[Rule],
                    fixed: Mapping[str, Any] | None) -> None:
    """Where the chip allows configs but the kernel the study exports to has none of them,
    say which of the kernel's rules one of them breaks."""
    kernel = [r for r in rules if isinstance(r, KernelRule)]
    if not kernel:
        return
    chip = SearchSpace(params, [r for r in rules if r not in kernel], fixed)
    if chip.n_feasible == 0:
        return
    config = chip.config(chip.sample_feasible(1, np.random.default_rng(0))[0])
    broken = SearchSpace(params, kernel, fixed).explain(config)
    raise SpecError(source, "search_space", "a space with a config its kernel has",
                    f"none of the {chip.n_feasible:,} configs the hardware allows; "
                    f"{'; '.join(broken)}")


def parse_baseline(source: str, document: Mapping[str, Any], space: SearchSpace,
                   known: bool) -> dict[str, Any] | None:
    """The baseline config: given, defaulted (KNOWN_PARAMS defaults) or None.

    A given baseline may leave out tuned parameters whose default is among the
    choices (a kernel today compiles with the compiler's defaults); it must be
    inside the space and feasible. ``null`` or ``false`` means "no baseline".
    """
    if "baseline" not in document:
        if not known:
            return None
        config = {n: default_config()[n] for n in space.names}
        if not all(config[p.name] in p.choices for p in space.params):
            return None
        return config if space.is_feasible(space.index(config)[None, :])[0] else None
    raw = document["baseline"]
    if raw is None or raw is False:
        return None
    section = Section(source, "baseline", raw, "an object of parameter values (or null)")
    section.check_keys(space.names)
    config: dict[str, Any] = {}
    for p in space.params:
        if p.name in section.data:
            value = section.data[p.name]
            try:
                config[p.name] = p.choices[p.index(value)]
            except ParamError:
                raise section.error(p.name, f"one of the choices {list(p.choices)}",
                                    value) from None
        elif known and default_config()[p.name] in p.choices:
            config[p.name] = default_config()[p.name]
        else:
            raise section.error(p.name, f"one of the choices {list(p.choices)}", raw="nothing")
    broken = space.explain(config)
    if broken:
        raise SpecError(source, "baseline", "a config the hardware and constraints allow",
                        f"one that breaks {'; '.join(broken)}")
    return config
