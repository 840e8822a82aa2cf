"""A study's certified winner: its top configs re-timed in interleaved rounds until the
leader separates from each rival or ties with it (:mod:`aoe_optuna.certify.race`).

The race's re-timings are stored in the study as they are taken (:mod:`.record`), so a
race killed anywhere resumes where it stopped; one process runs it under a lease
(:mod:`.lease`); they are not trials, so they do not count against the search's
measurements. :mod:`.run` drives it, :mod:`.outcome` reads its verdict.
"""
