"""Export a tuned config as a catlass instantiation header for a user's op to include.

The header is the npu backend's own rendering
(:mod:`aoe_optuna.backends.npu.catlass.render`), so what a user builds is what the
backend measured with ``kernel: catlass``; the leading comment records where the config
came from.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from aoe_optuna.atomic_write import write_atomic
from aoe_optuna.backends.npu.catlass.args import CatlassArgError, CatlassArgs, catlass_args
from aoe_optuna.backends.npu.catlass.render import render_header
from aoe_optuna.export.kernel_source import ExportError, ExportInfo
from aoe_optuna.hardware.profile import SocProfile
from aoe_optuna.study.storage.redact import redact_url


def provenance(info: ExportInfo | None, config: Mapping[str, Any], dtype: str,
               soc: str) -> list[str]:
    lines = [f"SoC {soc}, dtype {dtype}."]
    if info is not None:
        where = f" in {redact_url(info.storage)}" if info.storage else ""
        trial = f", trial {info.trial}" if info.trial is not None else ""
        lines.append(f"Study {info.study}{where}{trial}.")
        if info.value is not None:
            gain = f" ({info.gain:+.1%} over the baseline)" if info.gain is not None else ""
            lines.append(f"{info.objective}: {info.value:.6g}{gain}.")
    text = json.dumps({k: config[k] for k in sorted(config)}, separators=(", ", ": "))
    lines.append(f"Config: {text.replace('*/', '* /')}")
    return lines


def catlass_header(config: Mapping[str, Any], profile: SocProfile, dtype: str,
                   info: ExportInfo | None = None) -> tuple[str, CatlassArgs]:
    """The header text and the arguments it instantiates; ExportError when catlass has none."""
    try:
        args = catlass_args(config, profile, dtype)
    except CatlassArgError as exc:
        raise ExportError(f"catlass header: {exc}") from None
    return render_header(args, provenance(info, config, dtype, profile.soc)), args


def write_catlass_header(path: str | os.PathLike[str], config: Mapping[str, Any],
                         profile: SocProfile, dtype: str,
                         info: ExportInfo | None = None) -> CatlassArgs:
    text, args = catlass_header(config, profile, dtype, info)
    write_atomic(path, text)
    return args
