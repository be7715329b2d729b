"""Settings that put the host or an account at risk. Secret values are never echoed."""

from __future__ import annotations

from collections.abc import Iterator

from lmi_config.rules.base import Example, Finding, LintUnit, rule
from lmi_config.secrets import credential_format, is_reference, is_secret_name, secret_pattern


@rule(
    code="LMI501",
    slug="trust-remote-code",
    severity="warning",
    summary="option.trust_remote_code=true runs Python code from the model repository.",
    why=(
        "With trust_remote_code the container executes modelling code downloaded with the weights; "
        "a compromised or mistyped repository runs arbitrary code on the endpoint. Pin "
        "option.revision to a reviewed commit or use a model supported natively."
    ),
    bad=Example("option.model_id=gpt2\noption.trust_remote_code=true\n"),
    good=Example("option.model_id=gpt2\noption.trust_remote_code=false\n"),
    source=(
        "djl-serving.md §6.1 (option.trust_remote_code, default false); Hugging Face transformers docs on trust_remote_code — "
        "https://github.com/deepjavalibrary/djl-serving/blob/d21927c4a692335fba62a87cc430a5fc00c5f790/serving/docs/lmi/deployment_guide/configurations.md "
        "https://huggingface.co/docs/transformers/custom_models"
    ),
)
def trust_remote_code(unit: LintUnit) -> Iterator[Finding]:
    setting = unit.config.settings.get("option.trust_remote_code")
    if setting is None or setting.value.strip().lower() != "true":
        return
    pinned = unit.config.get("option.revision")
    advice = "revision is pinned" if pinned else "pin option.revision to a reviewed commit"
    yield unit.finding(
        "LMI501",
        f"trust_remote_code=true executes code from the model repository at load time; {advice}",
        setting=setting,
    )


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
