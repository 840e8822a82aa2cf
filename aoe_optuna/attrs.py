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
ATTR_REPEAT_OF = "repeat_of"  # a config measured before: its result is served, not re-measured
ATTR_HELD_BY = "held_by"  # an earlier trial holds (runs or waits with) the same config
# A retry that holds the measurement of the trial it retries, made by a worker that was
# paused past the heartbeat's grace (aoe_optuna.study.late).
ATTR_LATE_RESULT_OF = "late_result_of"

# Study user attributes: the study describes itself, so storage + name is all a worker needs.
SPEC_ATTR = "aoe_spec"  # StudySpec.canonical() (a JSON-able dict)
SPEC_SOURCE_ATTR = "aoe_spec_source"  # the file the spec came from (informative only)
BASELINE_ATTR = "baseline_tokens_per_s"
ROOFLINE_ATTR = "roofline_tokens_per_s"
# The sampler aoe-tune last ran the study with ({"name", "kwargs", "seed"}), so that
# resuming with storage and name only continues with the same sampler.
SAMPLER_ATTR = "aoe_sampler"
