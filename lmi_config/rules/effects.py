"""Settings the container ignores or replaces (the judge's verdict, ``shape/effects.py``)."""

from __future__ import annotations

from collections.abc import Iterator

from lmi_config.rules.base import Example, Finding, LintUnit, rule


@rule(
    code="LMI214",
    slug="setting-without-effect",
    severity="warning",
    summary="A setting the container ignores or replaces; the finding names the value that takes effect.",
    why=(
        "The container reads some settings only in one batching mode, and some handlers run another value "
        "than the one written: transformers-neuronx runs its own rolling batch (tnx) for rolling_batch=lmi-dist, "
        "and with rolling batch off (its default up to LMI 0.29) it compiles option.batch_size, not "
        "option.max_rolling_batch_size. The file then promises what the endpoint does not do."
    ),
    bad=Example(
        "option.model_id=mistralai/Mistral-7B-v0.1\noption.entryPoint=djl_python.transformers_neuronx\n"
        "option.tensor_parallel_degree=2\noption.max_rolling_batch_size=3\noption.n_positions=2048\n",
        args={"lmi_version": "0.29.0", "instance": "inf2.8xlarge"},
    ),
    good=Example(
        "option.model_id=mistralai/Mistral-7B-v0.1\noption.entryPoint=djl_python.transformers_neuronx\n"
        "option.tensor_parallel_degree=2\noption.rolling_batch=auto\noption.max_rolling_batch_size=3\n"
        "option.n_positions=2048\n",
        args={"lmi_version": "0.29.0", "instance": "inf2.8xlarge"},
    ),
    source=(
        "lmi_config/data/container_shape.json (rolling_batch, handler_rolling_batch, batch) — "
        "https://github.com/deepjavalibrary/djl-serving/blob/73a782da2778df24e31d9e7692076896f7cf189b/engines/python/setup/djl_python/transformers_neuronx.py#L128"
    ),
)
def setting_without_effect(unit: LintUnit) -> Iterator[Finding]:
    for problem in unit.problems("setting-without-effect"):
        yield unit.report("LMI214", problem)
