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
