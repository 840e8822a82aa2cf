"""What every kernel family of the npu backend renders with: its templates, the one way a
value enters a source, the SoC name CANN takes, the element types and the tolerance of
an fp16/bf16 result.

Each family (:mod:`.simple_gemm`, :mod:`.catlass`, :mod:`.layer_kernels`) keeps its
sources in its own ``templates/`` folder; what their build trees share (the host
programs' common headers, the CMake project of the project's own Ascend C kernels) is
in this package's ``templates/``. Templates are package data, found wherever the
package is installed. Values are written as literals only: an ``int`` that passed
validation, ``true``/``false``, or a name looked up in a fixed table.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from aoe_optuna.hardware.profile import SocProfile

# The host programs' shared exit codes, ACL check and timing rules: every build tree
# carries it beside its program.
BENCH_COMMON_FILE = "aoe_bench_common.h"
# fp16/bf16 to and from float and the deterministic inputs, for the host programs that
# make their operands and check their outputs (the layer kernels', catlass attention's).
HOST_NUMBERS_FILE = "aoe_host_numbers.h"
# Workload dtype -> the kernels' InputT.
INPUT_TYPES = {"fp16": "half", "bf16": "bfloat16_t"}
# A host check's relative tolerance: one unit in the last place of the output's type
# (inputs are exact and the kernels compute in fp32, so rounding the output is the
# error a right result may have).
RTOL = {"fp16": 2.0**-10, "bf16": 2.0**-7}
_SOC_NAME = re.compile(r"Ascend[0-9A-Za-z_]{1,40}")


class RenderError(ValueError):
    """A config or template that cannot be rendered; the message names the value."""


@dataclass(frozen=True)
class Templates:
    """The ``templates/`` folder of one package of the npu backend."""

    package: str

    def text(self, name: str) -> str:
        return (resources.files(self.package) / "templates" / name).read_text()

    def path(self, name: str) -> Path:
        """Where the file lies in the installed package (for a user to read or copy)."""
        return Path(str(resources.files(self.package) / "templates" / name))


SHARED = Templates("aoe_optuna.backends.npu")


def check_soc(profile: SocProfile) -> str:
    if not _SOC_NAME.fullmatch(profile.soc):
        raise RenderError(f"hardware soc {profile.soc!r}: expected a CANN SOC_VERSION "
                          "such as Ascend910B2")
    return profile.soc


def set_declaration(text: str, name: str, literal: str) -> str:
    """``text`` with the value of its one declaration of ``name`` replaced by ``literal``.

    Recognised forms, each on one line: ``constexpr <type> NAME = v;``,
    ``#define NAME v`` and ``using NAME = v;``. None or several matches are an error.
    Only the lines holding ``name`` are matched (a kernel renders tens of names into a
    template of thousands of lines).
    """
    forms = (
        rf"([ \t]*(?:static\s+)?constexpr\s+[\w:]+\s+{name}\s*=\s*)([^;\n]+?)(\s*;)",
        rf"([ \t]*#\s*define\s+{name}\s+)(\S+)()",
        rf"([ \t]*using\s+{name}\s*=\s*)([\w:]+)(\s*;)",
    )
    hits: list[tuple[int, int]] = []
    at = text.find(name)
    while at >= 0:
        start = text.rfind("\n", 0, at) + 1
        end = text.find("\n", at)
        end = len(text) if end < 0 else end
        for form in forms:
            m = re.compile(form).match(text, start, end)
            if m:
                hits.append((m.start(2), m.end(2)))
        at = text.find(name, end)
    if len(hits) != 1:
        raise RenderError(f"kernel template: expected one declaration of {name}, "
                          f"found {len(hits)}")
    begin, stop = hits[0]
    return text[:begin] + literal + text[stop:]


def render_kernel(template: str, values: Mapping[str, str]) -> str:
    for name, literal in values.items():
        template = set_declaration(template, name, literal)
    return template
