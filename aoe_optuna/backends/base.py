"""The interface every backend implements, and what a measurement returns.

A backend instance measures (:class:`Backend`); its class is built from a
spec's ``backend`` section and may say more about the study than how to time
a kernel (:class:`BackendBase`: its own search space, its own workload, the
rules of the device it runs on, whether its figures are modelled or timed,
whether its runs build ahead by default, the device a timing leases, how it
measures an operator run's attention and vector kernels). The spec, the study
and the operator run ask these of the backend; nothing outside ``backends/``
asks a backend its name or its type.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol

from aoe_optuna.workload.gemm import Gemm

if TYPE_CHECKING:
    from typing import Self

    from aoe_optuna.hardware.profile import SocProfile
    from aoe_optuna.space.constraints import Rule
    from aoe_optuna.space.search_space import SearchSpace
    from aoe_optuna.workload.gemm import Workload

# How a backend measures an operator run's attention and vector kernels
# (:attr:`BackendBase.layer_kernels`): by its own models of them, or each candidate's
# program built and timed on its device.
LayerKernels = Literal["model", "device"]
FailureKind = Literal["infeasible", "build", "runtime", "timeout", "accuracy", "unsupported"]
# ``Measurement.extra`` key of a failure's full log (a compiler's whole output, a crashed
# run's stderr): the study keeps it as an artifact of the failed trial.
FAILURE_LOG = "log"


@dataclass(frozen=True)
class Measurement:
    """The outcome of measuring one config of one problem (a GEMM, a layer kernel).

    ``cost_s`` is what the measurement cost (or, on the simulator, would cost
    on hardware: build + warm-up + timed runs), so time budgets mean the same
    on every backend.
    """

    ok: bool
    latency_s: float | None = None
    failure_kind: FailureKind | None = None
    reason: str = ""
    cost_s: float = 0.0
    spread: float | None = None  # relative spread of the timed repeats, if known
    extra: Mapping[str, Any] = field(default_factory=dict)
    # the timed repeats the latency was taken from (seconds per call), where the backend
    # keeps them: the objective stores them and reports their mean and standard error
    samples_s: tuple[float, ...] = ()

    @classmethod
    def success(cls, latency_s: float, cost_s: float, **kw: Any) -> Measurement:
        return cls(ok=True, latency_s=float(latency_s), cost_s=float(cost_s), **kw)

    @classmethod
    def failure(cls, kind: FailureKind, reason: str, cost_s: float = 0.0, **kw: Any) -> Measurement:
        return cls(ok=False, failure_kind=kind, reason=reason, cost_s=float(cost_s), **kw)


@dataclass(frozen=True)
class BuildAhead:
    """A config's kernel built before its timing (a build pool's work): how long the build
    took, whether the cache already held it, and whether it compiled. A failed build is
    remembered by the backend, so its ``measure`` reports it as it always does."""

    seconds: float
    cached: bool
    ok: bool


class Backend(Protocol):
    """Measures one config of one problem: a GEMM here; the npu backend also times a
    layer kernel's program (``NpuBackend.measure_program``)."""

    name: str

    def measure(self, config: Mapping[str, Any], gemm: Gemm) -> Measurement:
        """Latency of ``gemm`` with ``config`` (a full config: untuned params included)."""
        ...

    def remeasure(self, config: Mapping[str, Any], gemm: Gemm, draw: int) -> Measurement:
        """The same config timed again (see :meth:`BackendBase.remeasure`)."""
        ...


class KernelModel(Protocol):
    """A backend's cheap model of its kernel's time: only its order of configs is used
    (as a prior, whose scale is fitted to the study's measurements)."""

    def describe(self) -> str:
        """What the model is, for the run summary ("model of the cpu kernel (AVX2...)")."""
        ...

    def latency(self, columns: Mapping[str, Any], gemm: Gemm) -> Any:
        """(n,) seconds for ``gemm`` under each config of a space's numeric ``columns``."""
        ...


class BackendBase(ABC):
    """What every registered backend class provides (``backends.registry``).

    Only :meth:`from_options` and :meth:`measure` are required. A backend module
    must import cleanly on any machine; it checks its toolchain in
    ``from_options`` or ``measure``. Bad options raise
    ``ValueError("<option>: expected ..., got ...")``: the leading option name
    lets the spec's error point at ``backend.<option>``. ``where`` is the spec's
    source (its file path, or ``"<stored>"``), for relative paths and messages.
    """

    name: ClassVar[str]
    # Whether the kernel runs on the spec's SoC (its cube cores): the simulator and
    # the NPU do, a CPU kernel or a replayed GPU space does not. Samplers that model
    # the tile fit over the cores read it (through the spec).
    runs_on_soc: ClassVar[bool] = True
    # Whether a latency is the model's own answer for the config, the same every time
    # (the simulator): an exhaustive search of it is the true optimum, not an estimate.
    exact_model: ClassVar[bool] = False
    # Whether a run builds ahead on a pool of builders when ``--builders`` is not given:
    # only where no measured value can change (study/run/pool_default.py says why).
    pooled_by_default: ClassVar[bool] = False
    # Whether a spec without a ``prior`` gets the simulator as GP-UCB's prior: where a
    # measurement costs a kernel build on an Ascend SoC (spec/prior.py).
    simulator_prior_by_default: ClassVar[bool] = False
    # Whether each device's host program keeps a host core of its own, away from the
    # builders (a card's launcher: study/run/build_pool.py ``PoolPlan.for_host``).
    host_core_per_device: ClassVar[bool] = False
    # Whether the kernels are built with the CANN toolkit: what ``aoe-tune doctor``
    # checks and dry-runs.
    cann_toolchain: ClassVar[bool] = False
    # How an operator run's attention and vector kernels are measured: "model" (the
    # backend's models of them), "device" (each candidate's program built and timed on
    # the backend's device: :meth:`target`, :meth:`measure_program`,
    # :meth:`build_program_ahead`), None (it times GEMMs only; such a run is refused).
    layer_kernels: ClassVar[LayerKernels | None] = None
    # How far above the best config's time one GEMM's timing may read before it is cut
    # short (relative; study/run/objective.py ``Evaluator``); None: never cut short.
    early_stop_margin: float | None = None

    @classmethod
    def has_roofline(cls) -> bool:
        """Whether the SoC profile's roofline bounds this backend's kernels: only where
        they run on the SoC; a CPU kernel or a replayed GPU space has no such bound."""
        return cls.runs_on_soc

    @classmethod
    def kernel_model(cls) -> KernelModel | None:
        """A cheap model of this backend's own kernel, which a spec without a ``prior``
        gets as GP-UCB's prior (``"prior": "model"``; spec/prior.py). None: no model."""
        return None

    @classmethod
    def timing_noise(cls, options: Mapping[str, Any]) -> float | None:
        """Relative noise of one timing (None: a repeat gives the same figure, so there
        is nothing to re-time). On hardware: the timing policy's precision target."""
        from aoe_optuna.backends.timing import TimingPolicy

        return TimingPolicy().rel_precision

    @classmethod
    def times_soc(cls) -> bool:
        """Whether a latency is a timing of the spec's SoC itself, not a model's figure
        nor another device's: what a chip profile can be fitted to (``aoe-tune calibrate
        --from-study``)."""
        return cls.runs_on_soc and not cls.exact_model

    @classmethod
    def leased_device(cls) -> str | None:
        """The device a worker's timings lease while a build pool builds ahead
        (study/run/device_lease.py). By default this process alone: a backend that times
        nothing real shares no device. None: a host core of its own
        (study/run/build_pool.py ``PoolPlan.for_host``)."""
        return f"{cls.name}-{os.getpid()}"

    @classmethod
    @abstractmethod
    def from_options(cls, options: Mapping[str, Any], profile: SocProfile) -> Self:
        """The backend for these options (the spec's section without ``name``)."""

    @abstractmethod
    def measure(self, config: Mapping[str, Any], gemm: Gemm) -> Measurement:
        """Latency of ``gemm`` with ``config`` (a full config: untuned params included)."""

    def remeasure(self, config: Mapping[str, Any], gemm: Gemm, draw: int) -> Measurement:
        """Time an already measured config again (re-timing a study's winners).

        On hardware every call is a new run, so this is :meth:`measure`; a model
        whose noise is fixed per config (the simulator) draws noise ``draw`` > 0.
        """
        return self.measure(config, gemm)

    def with_noise_seed(self, seed: int) -> BackendBase:
        """This backend with its noise drawn from ``seed`` (a bench run's own draw of the
        noise); itself where a timing's noise is not drawn from a seed."""
        return self

    def noise_note(self) -> str | None:
        """What a measurement's noise is, in words, where the backend draws it from a
        recording (None: a timing's own, or the spec's noise)."""
        return None

    def environment(self) -> dict[str, str]:
        """What this backend's timings depend on beyond the config (toolkit, compiler,
        device): the knowledge base stamps its entries with it, and ``aoe-tune recheck``
        re-times an entry whose stamp differs from this machine's."""
        return {"backend": self.name}

    def build_ahead(self, config: Mapping[str, Any], gemm: Gemm) -> BuildAhead | None:
        """Build ``config``'s kernel for ``gemm`` now, so that :meth:`measure` only times it
        (a build pool compiles on other cores while a device times). None: this backend
        has no separate build (a model, a replayed space); ``measure`` does everything."""
        return None

    def target(self) -> Any:
        """What an operator kind renders its kernel's program for on this backend's device
        (where :attr:`layer_kernels` is ``"device"``)."""
        raise NotImplementedError(f"the {self.name} backend times no kernel programs")

    def measure_program(self, program: Any) -> Measurement:
        """Build and time a kind's kernel with its host program (rendered for
        :meth:`target`) as a GEMM's is timed: same policy, failure kinds and device."""
        raise NotImplementedError(f"the {self.name} backend times no kernel programs")

    def build_program_ahead(self, program: Any) -> BuildAhead:
        """Build a kind's program now, so that :meth:`measure_program` only times it (a
        build pool's step, as :meth:`build_ahead` for a GEMM)."""
        raise NotImplementedError(f"the {self.name} backend times no kernel programs")

    @classmethod
    def resolve_options(cls, options: Mapping[str, Any], where: str) -> dict[str, Any]:
        """The options in a form valid from anywhere (e.g. a path made absolute): the
        spec keeps that form, so a study rebuilt from storage finds the same file."""
        return dict(options)

    @classmethod
    def search_space(cls, options: Mapping[str, Any], where: str) -> SearchSpace | None:
        """The backend's own space, for configs that are not the Ascend GEMM tunables
        (a recorded Kernel Tuner space); None: the spec's ``search_space`` section.
        With a space of its own, the spec must not have a ``search_space`` section,
        its ``constraints`` are added to this space and no Ascend rules apply."""
        return None

    @classmethod
    def workload(cls, options: Mapping[str, Any], where: str) -> Workload | None:
        """The backend's own workload (a replayed kernel: one op, tokens/s = 1/latency);
        None: the spec's ``workload`` section."""
        return None

    @classmethod
    def device_rules(cls, profile: SocProfile, dtype: str) -> Sequence[Rule] | None:
        """The tiling rules of the device the kernel runs on when it is not the Ascend AI
        core (the CPU kernel's template limits); None: the SoC profile's capacity rules."""
        return None
