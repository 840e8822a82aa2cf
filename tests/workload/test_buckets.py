"""Serving buckets: each (batch, seq_len) is a workload; the merge is one cycle of serving
each bucket ``weight`` times, tokens/s = total tokens / total time."""

from __future__ import annotations

import pytest

from aoe_optuna.workload.buckets import bucket_label, merge_buckets, serving_workload
from aoe_optuna.workload.models import builtin_architecture, model_workload

QWEN = builtin_architecture("qwen2.5-7b")


def test_one_bucket_is_the_plain_workload(profile):
    assert serving_workload(profile, QWEN, "decode", [16], [1024]) == model_workload(
        profile, "qwen2.5-7b", "decode", 16, 1024)


def test_batch_buckets_are_prefixed_and_tokens_per_s_is_total_over_total(profile):
    merged = serving_workload(profile, QWEN, "decode", [1, 16, 64], [1024])
    parts = {b: model_workload(profile, "qwen2.5-7b", "decode", b, 1024) for b in (1, 16, 64)}
    assert [g.name for g in merged.gemms[:5]] == ["b1/qkv_proj", "b1/o_proj", "b1/gate_up_proj",
                                                  "b1/down_proj", "b1/lm_head"]
    assert len(merged.gemms) == 15 and len({g.name for g in merged.gemms}) == 15
    assert merged.gemms[5].M == 16 and merged.gemms[10].key == parts[64].gemms[0].key
    assert merged.tokens_per_step == 1 + 16 + 64
    assert merged.details["b16/attention_s"] == parts[16].details["attention_s"]
    latencies = {g.name: 1e-6 * g.M + 2e-5 for g in merged.gemms}
    steps = {b: wl.step_time({g.name: latencies[f"b{b}/{g.name}"] for g in wl.gemms})
             for b, wl in parts.items()}
    assert merged.step_time(latencies) == pytest.approx(sum(steps.values()))
    assert merged.tokens_per_s(latencies) == pytest.approx(81 / sum(steps.values()))
    assert merged.name == "qwen2.5-7b decode batch=[1,16,64] seq_len=1024 tp=1 fp16"


def test_weights_count_steps_of_each_bucket(profile):
    a = model_workload(profile, "qwen2.5-7b", "prefill", 1, 512)
    b = model_workload(profile, "qwen2.5-7b", "decode", 8, 512)
    merged = merge_buckets([("prefill", a), ("decode", b)], weights=[1, 30])
    assert merged.tokens_per_step == 512 + 30 * 8
    assert merged.fixed_s == pytest.approx(a.fixed_s + 30 * b.fixed_s)
    lat = {g.name: 1e-4 for g in merged.gemms}
    step_a = a.step_time({g.name: 1e-4 for g in a.gemms})
    step_b = b.step_time({g.name: 1e-4 for g in b.gemms})
    assert merged.tokens_per_s(lat) == pytest.approx((512 + 240) / (step_a + 30 * step_b))
    assert merged.details["decode/weight"] == 30.0
    assert {g.count for g in merged.gemms if g.name.startswith("decode/")} == {30 * 28, 30}


def test_batch_and_seq_len_lists_make_their_product(profile):
    merged = serving_workload(profile, QWEN, "prefill", [1, 2], [256, 512], tp=2,
                              weights=[4, 3, 2, 1])
    labels = sorted({g.name.split("/")[0] for g in merged.gemms})
    assert labels == ["b1-s256", "b1-s512", "b2-s256", "b2-s512"]
    assert merged.tokens_per_step == 4 * 256 + 3 * 512 + 2 * 512 + 1 * 1024
    assert bucket_label(16, 1024, 3, 1) == "b16" and bucket_label(1, 2048, 1, 2) == "s2048"


@pytest.mark.parametrize(("weights", "phrase"), [([1], "expected 2 weights"),
                                                 ([1, 0], "at least 1"), ([1, 1.5], "1.5")])
def test_bad_weights(profile, weights, phrase):
    wl = model_workload(profile)
    with pytest.raises(ValueError, match=f"^weights: .*{phrase}"):
        merge_buckets([("a", wl), ("b", wl)], weights)
    with pytest.raises(ValueError, match="distinct labels"):
        merge_buckets([("a", wl), ("a", wl)])
