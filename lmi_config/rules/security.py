"""Settings that put the host or an account at risk. Secret values are never echoed."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from lmi_config.rules.base import Example, Finding, LintUnit, rule
from lmi_config.secrets import credential_format, is_reference, is_secret_name, secret_pattern

if TYPE_CHECKING:
    from lmi_config.configfile.canonical import Setting


@rule(
    code="LMI501",
    slug="trust-remote-code",
    severity="warning",
    summary="option.trust_remote_code=true for a model that ships its own Python code (auto_map in config.json).",
    why=(
        "With trust_remote_code the container executes modelling code downloaded with the weights (the classes "
        "config.json's auto_map names); a compromised or mistyped repository runs arbitrary code on the endpoint. "
        "Pin option.revision to a reviewed commit or use a model supported natively. For a model transformers "
        "supports natively (no auto_map) the flag changes nothing and is not reported; for a model lmi-config "
        "cannot look up, trust-remote-code-unverified says so as an info."
    ),
    bad=Example(
        "option.model_id=internlm/internlm2_5-7b-chat\noption.rolling_batch=vllm\noption.trust_remote_code=true\n",
        args={"backend": "vllm", "lmi_version": "0.30.0"},
    ),
    good=Example(
        "option.model_id=internlm/internlm2_5-7b-chat\noption.rolling_batch=vllm\noption.trust_remote_code=true\n"
        "option.revision=0d3d9f4\n",
        args={"backend": "vllm", "lmi_version": "0.30.0"},
    ),
    source=(
        "djl-serving.md §6.1 (option.trust_remote_code, default false); Hugging Face transformers docs on trust_remote_code — "
        "https://github.com/deepjavalibrary/djl-serving/blob/d21927c4a692335fba62a87cc430a5fc00c5f790/serving/docs/lmi/deployment_guide/configurations.md "
        "https://huggingface.co/docs/transformers/custom_models"
    ),
)
def trust_remote_code(unit: LintUnit) -> Iterator[Finding]:
    setting = _trusted(unit)
    model = unit.context.model
    if (
        setting is None
        or model is None
        or not model.config_verbatim  # a copy judged by another model's config: LMI503 says it is unknown
        or "auto_map" not in model.loading
        or unit.config.get("option.revision")
    ):
        return
    yield unit.finding(
        "LMI501",
        f"trust_remote_code=true executes the code {model.model_id} ships (auto_map in config.json) at load time; "
        "pin option.revision to a reviewed commit",
        setting=setting,
    )


@rule(
    code="LMI503",
    slug="trust-remote-code-unverified",
    severity="info",
    summary="option.trust_remote_code=true for a model lmi-config cannot look up: whether code runs is unknown.",
    why=(
        "trust_remote_code only matters when the repository ships its own modelling code (auto_map in "
        "config.json). Without the model's config (a template placeholder, a private or S3 model, a model "
        "outside the catalog and no --model directory or Hub access) lmi-config cannot tell; pass --model to check."
    ),
    bad=Example("option.model_id={{model_id}}\noption.rolling_batch=vllm\noption.trust_remote_code=true\n"),
    good=Example("option.model_id={{model_id}}\noption.rolling_batch=vllm\n"),
    source="https://huggingface.co/docs/transformers/custom_models (auto_map and trust_remote_code)",
)
def trust_remote_code_unverified(unit: LintUnit) -> Iterator[Finding]:
    setting = _trusted(unit)
    if setting is None or (unit.context.model is not None and unit.context.model.config_verbatim):
        return
    yield unit.finding(
        "LMI503",
        "trust_remote_code=true: without the model's config.json lmi-config cannot tell whether the repository "
        "ships code that runs at load time — pass --model (a directory or Hub id) to check, or pin option.revision",
        setting=setting,
    )


def _trusted(unit: LintUnit) -> Setting | None:
    setting = unit.config.settings.get("option.trust_remote_code")
    return setting if setting is not None and setting.value.strip().lower() == "true" else None


@rule(
    code="LMI502",
    slug="secret-in-config",
    severity="error",
    summary="A credential (a Hugging Face token, an AWS key, any value under a *_TOKEN, *SECRET* or *_PASSWORD name) in a configuration file.",
    why=(
        "Configuration files end up in git, S3 model tarballs and CI logs. Pass HF_TOKEN and AWS "
        "credentials from a secret store or the execution role at deploy time instead. A value in a "
        "known credential format is an error; any other value under a secret-named key (option.hf_token, "
        "MY_API_TOKEN, DB_PASSWORD) is a warning, and is never printed by lint, explain, convert or render."
    ),
    bad=Example("HF_MODEL_ID=meta-llama/Llama-3.1-8B\nHF_TOKEN=hf_" + "x" * 34 + "\n", kind="env"),
    good=Example("HF_MODEL_ID=meta-llama/Llama-3.1-8B\n", kind="env"),
    source=(
        "lmi_config/data/env_vars.json (secrets, secret_patterns) — "
        "https://huggingface.co/docs/hub/security-tokens "
        "https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_identifiers.html#identifiers-unique-ids"
    ),
)
def secret_in_config(unit: LintUnit) -> Iterator[Finding]:
    for source in unit.sources:
        # one search of the whole text instead of one per value (an escape could hide a token)
        text_may_hold = "\\" in source.text or secret_pattern().search(source.text) is not None
        for name, value, line in source.assignments():
            secret_named = is_secret_name(name)
            if (text_may_hold or secret_named) and credential_format(value, name):
                yield unit.finding(
                    "LMI502",
                    f"{name} holds a credential (value not shown); remove it from the file and pass it at "
                    "deploy time from a secret store (e.g. SageMaker Environment set from AWS Secrets Manager)",
                    path=source.path,
                    line=line,
                    key=name,
                )
            elif secret_named and not is_reference(value):
                yield unit.finding(
                    "LMI502",
                    f"{name} is set in the file (the value does not look like a real credential and is not shown); "
                    "keep credentials out of configuration files and pass them at deploy time",
                    path=source.path,
                    line=line,
                    key=name,
                    severity="warning",
                )
