"""The attribute names under which a study and its trials keep what aoe_optuna records.

One module at the bottom of the package, so that the objective that writes a
trial's result and the samplers that read it agree on the names without the
samplers importing the study layer. The dashboard shows every user attribute.
"""

# Trial user attributes.
ATTR_MEASURED = "measured"
ATTR_COST = "cost_s"
ATTR_FAILURE_KIND = "failure_kind"
ATTR_FAILURE = "failure_reason"
ATTR_INFEASIBLE = "violated_rules"
ATTR_CONSTRAINTS = "constraints"
ATTR_BASELINE = "baseline"
ATTR_SURPLUS = "surplus"  # proposed after the budget was taken by earlier trials
ATTR_BUILD_S = "build_s"  # the build's part of a measurement's cost (0: the cache had it)
# every kernel of the measurement came from the build cache (a failed build it remembered
# too); absent where the evaluator does not say
ATTR_BUILD_CACHED = "build_cached"
ATTR_SAMPLER_S = "sampler_s"  # from the trial's creation to its config checked
ATTR_CUT_SHORT = "cut_short"  # timing stopped early, clearly slower: never reported as best
ATTR_REPEAT_OF = "repeat_of"  # a config measured before: its result is served, not re-measured
ATTR_HELD_BY = "held_by"  # an earlier trial holds (runs or waits with) the same config
# A retry that holds the measurement of the trial it retries, made by a worker that was
# paused past the heartbeat's grace (aoe_optuna.study.trials.ended_elsewhere).
ATTR_LATE_RESULT_OF = "late_result_of"

# Study user attributes: the study describes itself, so storage + name is all a worker needs.
SPEC_ATTR = "aoe_spec"  # StudySpec.canonical() (a JSON-able dict)
SPEC_SOURCE_ATTR = "aoe_spec_source"  # the file the spec came from (informative only)
# a study without a spec (an operator run's attention or vector kernel): its parameter names
SPACE_PARAMS_ATTR = "space_params"
BASELINE_ATTR = "baseline_tokens_per_s"
# Where the study's last run measured: the project's version and what its backend's timings
# depend on (BackendBase.environment); the knowledge base stamps its entries with it.
ENV_ATTR = "environment"
ROOFLINE_ATTR = "roofline_tokens_per_s"
# The sampler aoe-tune last ran the study with ({"name", "kwargs", "seed"}), so that
# resuming with storage and name only continues with the same sampler.
SAMPLER_ATTR = "aoe_sampler"
# Trial user attributes of a measurement (TuningObjective's record; the dashboard shows them).
ATTR_TOKENS_PER_S = "tokens_per_s"
ATTR_LATENCY_US = "latency_us"  # {gemm: us} of a single-GEMM trial
ATTR_REPEATS_US = "repeats_us"  # {gemm: [us, ...]}: the timed repeats a latency came from
ATTR_TIMING_US = "timing_us"  # {gemm: {n, mean, se}}: the repeats' mean and standard error

# Trial system attributes our samplers keep.
CLAIM_ATTR = "aoe:claim"  # the config a RUNNING trial's sampler claimed (samplers.claims)
GP_HYPER_ATTR = "gp_ucb:hyper"  # the GP hyperparameters fitted for the trial
GP_FITTED_AT_ATTR = "gp_ucb:fitted_at"  # the completed trials those were last fitted on
GP_LOCAL_ATTR = "gp_ucb:local"  # the trial's proposal was a local step
GP_FLIP_ATTR = "gp_ucb:flip"  # the trial's proposal was the incumbent, one category changed
GP_PRIOR_ATTR = "gp_ucb:prior"  # the prior of the trial's proposal and how much the GP trusted it
# Trial system attributes of recovery: who runs a trial, and Optuna's retry lineage keys
# (RetryFailedTrialCallback's names).
WORKER_ATTR = "worker"  # {"host": ..., "pid": ...} of the process running the trial
FAILED_TRIAL_KEY = "failed_trial"
RETRY_HISTORY_KEY = "retry_history"
# Optuna's own trial system attributes, read and written by their names.
OPTUNA_FIXED_PARAMS_KEY = "fixed_params"  # an enqueued trial's params
OPTUNA_FAIL_REASON_KEY = "fail_reason"  # why Optuna's study marked a trial FAIL
# constraints_func's values ("constraints:<key>" per Trial.set_constraint key); not our
# user attribute ATTR_CONSTRAINTS, which records the study's rules a config broke.
OPTUNA_CONSTRAINTS_KEY = "constraints"

# Study user attributes of an operator run (the parent study) and its shape studies.
PLAN_ATTR = "operators"  # on the parent study: the shapes
SCHEDULER_ATTR = "scheduler"  # on the parent study: the scheduler's name
ALLOCATION_ATTR = "allocation"  # on the parent study: {shape study: measurements it may hold}
DONE_ATTR = "done"  # on the parent study: the run has spent its budget
CLOSED_ATTR = "closed"  # on the parent study: shape studies that get no more chunks
RETIME_ATTR = "retimed"  # on a shape study: the re-timing record (RetimeRecord.as_attr)
# Study user attribute of a study's race of its winners (aoe_optuna.study.race): the
# contenders, their re-timings round by round, the verdict; and the write-once lease
# that lets one process run it (the prefix, then the search's size and the attempt).
RACE_ATTR = "race"
RACE_LEASE_PREFIX = "race_lease:"
WARM_ATTR = "warm_start"  # on an enqueued trial: where its config came from
LAYER_OP_ATTR = "layer_op"  # on an attention or vector study: its plan entry

# Study and trial user attributes of a kernel-set run (aoe-tune kernel-set).
KERNEL_SET_PLAN_ATTR = "kernel_set"  # on the parent study: the mix, operators, budget
KERNEL_SET_OP_ATTR = "kernel_set_op"  # on an operator's study: its (K, N, dtype) and shapes
ATTR_SHAPE_M = "M"  # on a measurement: the M it was timed at
