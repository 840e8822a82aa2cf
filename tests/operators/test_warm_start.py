"""Which neighbours' winners seed a shape's study."""

from aoe_optuna.operators.shapes import OperatorShape
from aoe_optuna.operators.warm_start import Donor, kb_donors, seeds_for
from aoe_optuna.spec.loader import spec_from_dict

SPACE = spec_from_dict({"search_space": {"tile_m": [16, 32, 64], "tile_n": [64, 128, 256],
                                         "tile_k": [64, 128]}}).space
SHAPE = OperatorShape(16, 4096, 4096, "fp16", ("q",), 1)


def d(dims, m, n, k=64, source="x"):
    return Donor(dims, {"tile_m": m, "tile_n": n, "tile_k": k}, source)


def test_nearest_first_new_configs_only_within_the_space():
    donors = [
        d((16, 4096, 8192), 32, 128, source="near"),
        d((16, 512, 512), 64, 256, source="far"),
        d((16, 4096, 4096), 16, 64, source="tried"),
        d((16, 4096, 4096), 48, 64, source="not a choice"),
    ]
    tried = [{"tile_m": 16, "tile_n": 64, "tile_k": 64}]
    got = seeds_for(SHAPE, donors, SPACE, tried, limit=5)
    assert [g.source for g in got] == ["near", "far"]
    assert seeds_for(SHAPE, donors, SPACE, tried, limit=1)[0].source == "near"
    # the same config from two donors is seeded once
    twice = [d((16, 4096, 8192), 32, 128, source="a"), d((16, 4096, 2048), 32, 128, source="b")]
    assert len(seeds_for(SHAPE, twice, SPACE, [], limit=5)) == 1


def test_untuned_keys_are_dropped_and_kb_donors_match_soc_op_dtype():
    entry = {"soc": "Ascend910B2", "op": "Gemm", "dtype": "fp16", "M": 16, "K": 4096,
             "N": 4096, "config": {"tile_m": 32, "tile_n": 128, "tile_k": 64, "pipeline": 2},
             "study": "s"}
    other = {**entry, "dtype": "int8"}
    donors = kb_donors([entry, other], "Ascend910B2", "Gemm", "fp16")
    assert [x.source for x in donors] == ["kb s"]
    assert seeds_for(SHAPE, donors, SPACE, [], 3)[0].params == {"tile_m": 32, "tile_n": 128,
                                                                "tile_k": 64}


# ---------------------------------------------------------------- attention
def test_attention_donors_seed_their_own_family_with_the_split_scaled_to_the_context():
    from aoe_optuna.hardware.profile import load_profile
    from aoe_optuna.operators.layer_ops import layer_operators

    profile = load_profile("Ascend910B2")
    wl = spec_from_dict({"workload": {"batch": 1, "seq_len": [1024, 32768],
                                      "attention": "tuned", "vector_kernels": "tuned"}}).workload
    ops = layer_operators(wl)
    short, long_ = ops[0], ops[1]
    assert (short.problem.context, long_.problem.context) == (1024, 32768)
    entry = {"kind": "attention", "soc": "Ascend910B2", "op": "decode_attention",
             "dtype": "fp16", "problem": short.problem_doc(), "study": "s",
             "config": {"kv_split": 1, "block_tile": 512, "l1_tile": 128, "l0_tile": 16,
                        "pipeline": 2}}
    other_soc = {**entry, "soc": "Ascend910B3"}
    paged = {**entry, "problem": {**short.problem_doc(), "kv_layout": "BSND"}}
    donors = kb_donors([entry, other_soc, paged], "Ascend910B2", "Gemm", "fp16")
    assert len(donors) == 2  # the other SoC's is not a donor
    (seed,) = seeds_for(long_, donors, long_.space(profile), [], limit=3)  # not BSND's
    # 32x the context: 32 splits (each reads the 1k tokens the single split read)
    assert seed.source == "kb s" and seed.params == {**entry["config"], "kv_split": 32}
    model = long_.model(profile)
    assert model(seed.params) < model(entry["config"]) / 3  # the split copied as is: slow
    assert seeds_for(SHAPE, donors, SPACE, [], limit=3) == []  # nothing for a GEMM
    vector = next(op for op in ops if op.kind != "attention")
    assert seeds_for(vector, donors, vector.space(profile), [], limit=3) == []
