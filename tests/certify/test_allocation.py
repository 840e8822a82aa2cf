"""Which rival a round of pairs times beside the leader."""

from __future__ import annotations

import math

import pytest

from aoe_optuna.certify.allocation import most_ambiguous


def test_the_rival_nearest_the_leader_in_standard_errors_is_timed():
    # 0.5% behind at 0.5% se (1 se) is more ambiguous than 0.3% behind at 0.1% (3 se)
    assert most_ambiguous([0.003, 0.005, 0.02], [0.001, 0.005, 0.005]) == 1
    # a rival measured ahead of the leader (the leader's own mean is noisy) comes first
    assert most_ambiguous([0.001, -0.0005], [0.002, 0.004]) == 1


def test_a_rival_with_no_standard_error_yet_comes_first_and_ties_go_to_the_first():
    assert most_ambiguous([0.001, 0.05], [0.002, math.inf]) == 1
    assert most_ambiguous([0.01, 0.05], [0.002, math.nan]) == 1
    assert most_ambiguous([0.01, 0.01], [0.002, 0.002]) == 0


def test_no_rival_or_a_missing_standard_error_is_refused():
    with pytest.raises(ValueError):
        most_ambiguous([], [])
    with pytest.raises(ValueError):
        most_ambiguous([0.01, 0.02], [0.001])
