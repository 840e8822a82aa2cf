"""Running a study, in rooms by job.

``session`` assembles a study (storage, spec, backend, sampler, objective) and
runs it; ``create`` creates or loads it and reconciles the spec; ``worker`` is
one worker process. The rooms below them: ``run`` (the objective, the run loop
and its budget, the pool of worker processes), ``storage`` (opening a storage
URL, the Journal lock, SQLite's enqueued-trial pop, write-once keys, redacted
URLs, artifacts), ``trials`` (what a trial holds, its fault points, how a dead
or paused worker's trial is recovered) and ``report`` (the summary, live
progress and the dashboard's plots).
"""
