"""A kernel set's catlass instantiations as one header a build includes.

Each distinct kernel of the set is one template instantiation (compile time, binary
size and registration each; msTuner_CATLASS advises staying under 5,000), declared in
``namespace aoe_catlass_ks::k<j>`` with the chain the npu backend renders for one
kernel (:func:`~aoe_optuna.backends.npu.catlass.render.type_lines`, the one writer of
it, so what a build compiles is what the backend measured): ``MatmulKernel``,
``MatmulAdapter`` and the constants of its variant. ``j`` is the kernel's index in
the dispatch header of :mod:`.kernel_set_header`, so a host runs
``aoe_catlass_ks::k<j>::MatmulAdapter`` for the ``index`` that
``aoe_ks_dispatch`` returns. One element type per file, as the single-kernel header.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

from aoe_optuna.atomic_write import write_atomic
from aoe_optuna.backends.npu.catlass.args import CATLASS_COMMIT, CatlassArgError, catlass_args
from aoe_optuna.backends.npu.catlass.render import (
    ARGUMENT_FORMS,
    FIXED_SPLITK,
    PADDING_ALIGN,
    header_prelude,
    includes,
    type_lines,
)
from aoe_optuna.export.kernel_set_header import OperatorDispatch
from aoe_optuna.export.kernel_source import ExportError
from aoe_optuna.hardware.profile import SocProfile

FILE = "aoe_catlass_kernel_set.h"


def catlass_kernel_set(kernels: Sequence[Mapping[str, Any]], operators: Sequence[OperatorDispatch],
                       profile: SocProfile, source: str = "") -> str:
    """The header text; :class:`ExportError` (one line) when a kernel has no catlass
    instantiation or the operators mix element types."""
    dtypes = sorted({op.dtype for op in operators})
    if len(dtypes) != 1:
        raise ExportError(f"catlass kernel set: one element type per file, got {dtypes}")
    dtype = dtypes[0]
    if not kernels:
        raise ExportError("catlass kernel set: no kernel to instantiate")
    served: dict[int, list[str]] = {}
    for op in operators:
        for r in op.ranges:
            served.setdefault(r.kernel, []).append(f"{op.label} M {r.low}..{r.high}")
    built = []
    for j, config in enumerate(kernels):
        try:
            built.append(catlass_args(config, profile, dtype))
        except CatlassArgError as exc:
            raise ExportError(f"catlass kernel set: kernel {j} ({_text(config)}): {exc}") \
                from None
    heads = sorted({h for a in built for h in includes(a)}, key=lambda h: ("kernel/" not in h, h))
    lines = [
        "/*",
        f" * {FILE}: the {len(kernels)} catlass GEMM instantiations of a kernel set, rendered by",
        " * aoe_optuna (export/catlass_kernel_set.py); regenerate it instead of editing it.",
        f" * Written against catlass@{CATLASS_COMMIT}. SoC {profile.soc}, dtype {dtype}."
        + (f" {source}." if source else ""),
        " * Kernel j is aoe_catlass_ks::k<j> (MatmulKernel, MatmulAdapter, kArgs: which",
        " * MatmulKernel::Arguments form, AOE_CATLASS_ARGS_*); aoe_ks_dispatch() of the",
        " * kernel set's dispatch header returns the j to run for a shape.",
        " * Compile as Ascend C (bisheng) with -I<catlass>/include "
        f"--npu-arch=dav-{built[0].arch.npu_arch}.",
        " */",
        *header_prelude(heads),
        "",
        "namespace aoe_catlass_ks {",
        "",
        f"constexpr uint32_t kKernelCount = {len(kernels)};",
        "",
    ]
    if any(a.variant == "splitk" for a in built):
        lines += [FIXED_SPLITK]
    for j, (config, args) in enumerate(zip(kernels, built, strict=True)):
        macro, form = ARGUMENT_FORMS[args.variant]
        lines += [
            f"// kernel {j}: {_text(config)}",
            f"// serves {'; '.join(served.get(j, ['no range']))}",
            f"// arguments: MatmulKernel::Arguments{form}",
            f"namespace k{j} {{",
            f"constexpr int kArgs = {macro};",
            f"constexpr uint32_t kSplitK = {int(args.split_k)};",
            f"constexpr uint32_t kPaddingAlign = {PADDING_ALIGN};",
            f"constexpr uint32_t kSwizzleOffset = {args.swizzle_offset};",
            f"constexpr uint32_t kSwizzleDirection = {args.swizzle_direction};",
            *type_lines(args),
            f"}}  // namespace k{j}",
            "",
        ]
    lines += ["}  // namespace aoe_catlass_ks", ""]
    return "\n".join(lines)


def write_catlass_kernel_set(path: str | os.PathLike[str], kernels: Sequence[Mapping[str, Any]],
                             operators: Sequence[OperatorDispatch], profile: SocProfile,
                             source: str = "") -> None:
    write_atomic(path, catlass_kernel_set(kernels, operators, profile, source))


def _text(config: Mapping[str, Any]) -> str:
    text = json.dumps({k: config[k] for k in sorted(config)}, separators=(", ", ": "))
    return text.replace("*/", "* /")
