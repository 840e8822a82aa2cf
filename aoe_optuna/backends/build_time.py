"""How long a kernel build takes on one host core, per kind and kernel family, and why.

The simulator charges each new config a build (``build_s``) and a timed run
(warm-up and repeats of the modelled latency, plus ``run_s``); a build pool's
virtual clock (:mod:`aoe_optuna.study.run.pipeline_clock`) overlaps the builds
on B host cores with the device's timings. These are the defaults; a spec
overrides them (``backend.build_s``, ``backend.run_s``).

No published compile time of a bisheng (``ccec``) build of one catlass or
Ascend C kernel instantiation was found (searched 2026-12-06: CANN docs,
catlass and AOE issue threads); the figures below are assumptions, stated as
such, from the project's own reading of the build steps: the numbers to
replace with measured ones from a CANN host.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BuildTime:
    """Seconds of one host core for one build, and where the figure comes from."""

    seconds: float
    source: str


ASSUMED = "assumed (no published figure found)"

# (kind, kernel family) -> one build on one host core
BUILD_TIMES: dict[tuple[str, str], BuildTime] = {
    ("gemm", "seed"): BuildTime(30.0, f"{ASSUMED}: one Ascend C kernel through "
                                "ascendc.cmake, host and device passes, tens of seconds"),
    ("gemm", "catlass"): BuildTime(30.0, f"{ASSUMED}: one catlass BlockMmad/KernelMatmul "
                                   "instantiation through bisheng, as the seed family"),
    ("attention", "catlass"): BuildTime(60.0, f"{ASSUMED}: a catlass FlashAttention kernel "
                                        "instantiates about twice a GEMM's templates"),
    ("vector", "ascendc"): BuildTime(20.0, f"{ASSUMED}: a vector-only Ascend C kernel, no "
                                     "cube templates"),
}

# One timed run on the card besides the kernel's own launches: starting the host program,
# ACL initialisation, copying the operands in and the check; "about a second" (issue 43).
RUN_OVERHEAD = BuildTime(1.0, f"{ASSUMED}: process start, aclInit, operand copies and the "
                         "result check of one timed run, about a second")


def build_time(kind: str, family: str) -> BuildTime:
    """The build time of ``kind``/``family``; KeyError names the known ones."""
    try:
        return BUILD_TIMES[(kind, family)]
    except KeyError:
        known = ", ".join(f"{k}/{f}" for k, f in BUILD_TIMES)
        raise KeyError(f"no build time for {kind}/{family}; known: {known}") from None


# The kernel family each part of a layer is built from (operators/kinds: ``part``).
PART_FAMILIES = {"gemm": ("gemm", "catlass"), "attention": ("attention", "catlass")}
VECTOR_FAMILY = ("vector", "ascendc")  # every other part: an Ascend C vector kernel


def part_build_time(part: str) -> BuildTime:
    """The build time of a layer operator's kernel by its part (``gemm``, ``attention``;
    anything else, a vector or gating kernel, is an Ascend C vector kernel)."""
    return build_time(*PART_FAMILIES.get(part, VECTOR_FAMILY))
