"""The attention and vector figures, their roles, and the held-out validation on them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from statistics import median

from aoe_optuna.calibration.layer_ops_validation import (
    checks,
    held_out_errors,
    host_floors,
    ranking_pairs,
    seen,
    seen_errors,
    simulate,
)
from aoe_optuna.calibration.published_layer_ops import (
    FIGURES,
    KINDS,
    ROLES,
    SOURCES,
    split_rows_width,
)

ROOT = Path(__file__).resolve().parents[2]
ROWS = simulate()


def test_every_figure_names_its_source_kind_role_and_timing() -> None:
    for f in FIGURES:
        assert f.source in SOURCES and f.kind in KINDS and f.role in ROLES, f
        assert f.time_us > 0 and f.timed and f.soc.startswith("Ascend910B"), f


def test_each_timing_host_has_one_floor_row_and_kernel_only_rows_have_none() -> None:
    hosts = {(f.source, f.host) for f in FIGURES if f.host}
    fit = [f for f in FIGURES if f.role == "fit"]
    assert len(fit) == len(hosts) == len(host_floors(FIGURES))
    assert all(f.host for f in fit)
    for r in ROWS:
        if not r.figure.host:  # timed on the cores: the model's kernel time as it is
            assert r.simulated_us == r.kernel_us


def test_a_hosted_figure_is_never_under_its_hosts_floor() -> None:
    floors = host_floors(FIGURES)
    for r in ROWS:
        if r.figure.host:
            assert r.simulated_us >= floors[(r.figure.source, r.figure.host)]


def test_held_out_errors_cover_every_kind_and_leave_the_fit_rows_out() -> None:
    errors = held_out_errors(ROWS)
    assert set(KINDS) <= set(errors)
    assert sum(len(v) for v in errors.values()) == len(checks(ROWS))
    for kind, values in errors.items():
        assert len(values) == sum(1 for r in checks(ROWS) if r.figure.kind == kind)
        assert all(isinstance(v, float) and v >= 0 for v in values)


def test_attention_held_out_median_and_order_stay_where_measured() -> None:
    """2026-12-06: decode 11.3%, prefill 14.3%, 458 of 573 pairs; a model change that
    loses more than a few points here has to say why."""
    errors = held_out_errors(ROWS)
    assert median(errors["decode_attention"]) < 0.15
    assert median(errors["prefill_attention"]) < 0.16
    kept, total = ranking_pairs(ROWS)
    assert total > 500 and kept / total > 0.75


def test_a_split_keeps_every_element_of_one_half_as_rows_by_width() -> None:
    assert split_rows_width((1024, 2048), -1) == (1024, 1024)
    assert split_rows_width((8192, 16384), 0) == (1, 4096 * 16384)
    assert split_rows_width((4, 510, 4097), 1) == (4, 255 * 4097)


def test_mla_held_out_median_stays_where_measured() -> None:
    """2026-12-06, cann-bench's MLA cases on a 910B2 (kernel time, cold L2) against the
    model of CANN's kernel: the four added after it was written check it (10.0%, worst
    17.1%); the five its 1.8x miss was read on are seen (5.8% in-sample; the catlass
    template read 44.9% on them)."""
    mla = held_out_errors(ROWS)["mla_decode_attention"]
    assert len(mla) == 4 and median(mla) < 0.12
    inside = seen_errors(ROWS)["mla_decode_attention"]
    assert len(inside) == 5 and median(inside) < 0.07


def test_the_vector_rows_the_models_were_changed_after_are_seen_not_held_out() -> None:
    """cann-bench's RmsNorm and SwiGlu rows were read before CANN's kernels were modelled:
    they leave the held-out set (no band) and are reported apart. 2026-12-06, in-sample:
    rmsnorm 14.0% (32.9% before, the generic model held out), swiglu 12.7% (16.0%)."""
    errors = held_out_errors(ROWS)
    assert errors["rmsnorm"] == [] and errors["swiglu"] == []
    assert {r.figure.kernel for r in seen(ROWS)} == {"cann_rmsnorm", "cann_swiglu", "cann_fia"}
    inside = seen_errors(ROWS)
    assert len(inside["rmsnorm"]) == 20 and median(inside["rmsnorm"]) < 0.16
    assert len(inside["swiglu"]) == 14 and median(inside["swiglu"]) < 0.15


def test_the_script_prints_the_fit_and_check_groups_apart() -> None:
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "validate_layer_ops.py")],
                         capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert "Figures that fit a constant" in out and "Held out, per source" in out
    assert "| decode_attention | 7 |" in out and "ranking pairs" in out
    assert "| rmsnorm | 0 | none held out (20 seen) |" in out and "## Seen" in out
