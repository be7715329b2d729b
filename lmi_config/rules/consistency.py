"""How the settings fit together: conflicts, the model, env variables and precedence."""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

from lmi_config.configfile.canonical import classify_env
from lmi_config.knowledge import model_location
from lmi_config.knowledge.options import catalogue, is_placeholder, known_keys_set
from lmi_config.rules.base import Example, Finding, LintUnit, rule
from lmi_config.rules.combinations import matches


@rule(
    code="LMI201",
    slug="conflicting-options",
    severity="error",
    summary="Settings that the container refuses together (or silently rewrites).",
    why=(
        "Some combinations fail only inside the running container: dynamic batching with rolling "
        "batch, vLLM's own names next to LMI's with other values, a handler with a rolling batch it "
        "cannot run, an engine the backend asserts against, more workers than engine=MPI can place (GPUs x "
        "nodes / (TP x PP): 'We can only expand worker to N')."
    ),
    bad=Example("option.model_id=gpt2\nbatch_size=4\noption.rolling_batch=vllm\n"),
    good=Example(
        "option.model_id=gpt2\nbatch_size=4\noption.rolling_batch=disable\n", args={"backend": "huggingface"}
    ),
    source=(
        "lmi_config/data/conflicts.json (each combination names its source: djl-serving.md §3, §5) — "
        "https://github.com/deepjavalibrary/djl-serving/blob/d21927c4a692335fba62a87cc430a5fc00c5f790/wlm/src/main/java/ai/djl/serving/wlm/LmiConfigRecommender.java "
        "https://github.com/deepjavalibrary/djl-serving/tree/d21927c4a692335fba62a87cc430a5fc00c5f790/engines/python/setup/djl_python/properties_manager "
        "https://github.com/deepjavalibrary/djl-serving/blob/0.30.0-dlc/engines/python/src/main/java/ai/djl/python/engine/PyModel.java#L252"
    ),
)
def conflicting_options(unit: LintUnit) -> Iterator[Finding]:
    for found in matches(unit):
        yield unit.finding("LMI201", found.message, setting=found.setting, severity=found.severity)
    for problem in unit.problems("conflicting-options"):
        yield unit.report("LMI201", problem)  # the judge's: a worker count engine=MPI cannot start
    yield from _accelerator_mismatch(unit)


def _accelerator_mismatch(unit: LintUnit) -> Iterator[Finding]:
    instance = unit.context.instance
    backend = unit.context.backend
    if instance is None or backend.accelerator in ("any", instance.accelerator):
        return
    if instance.accelerator == "cpu":
        yield unit.finding(
            "LMI201",
            f"backend {backend.id} ({unit.context.backend_reason}) needs {backend.accelerator} devices, but "
            f"{instance.instance_type} has none (a CPU instance); choose a GPU or Inferentia2/Trainium instance",
            line=None,
        )
        return
    wanted = (
        "a Neuron backend (transformers-neuronx or NxD Inference)"
        if instance.accelerator == "neuron"
        else "a GPU backend (vLLM, TensorRT-LLM)"
    )
    yield unit.finding(
        "LMI201",
        f"backend {backend.id} ({unit.context.backend_reason}) runs on {backend.accelerator}, but "
        f"{instance.instance_type} has {instance.accelerator_name} {instance.accelerator} devices; use {wanted}",
        line=None,
    )


@lru_cache(maxsize=256)
def _has_model_files(directory: Path) -> bool:
    """Model files beside the configuration (listed once per directory: a run over one folder of
    many configurations would otherwise list it once per file)."""
    pattern = re.compile(model_location().artifact_pattern)
    try:
        return any(pattern.match(path.name) for path in directory.iterdir())
    except OSError:
        return False


@rule(
    code="LMI202",
    slug="missing-model",
    severity="warning",
    summary="No model is named: no option.model_id / HF_MODEL_ID and no model files beside the config.",
    why=(
        "The container looks for option.model_id (or HF_MODEL_ID), else for model files in the model "
        "directory; with neither it fails at start with '.py file not found' or loads nothing. A warning, "
        "not an error: the files may be packaged with the configuration in the model tarball."
    ),
    bad=Example("option.tensor_parallel_degree=2\noption.rolling_batch=vllm\n"),
    good=Example(
        "option.model_id=meta-llama/Llama-3.1-8B-Instruct\noption.tensor_parallel_degree=2\noption.rolling_batch=vllm\n"
    ),
    source=(
        "djl-serving.md §1.3-§1.5 (ModelStore, LmiUtils.configureLmiModel), §4 ('.py file not found') — "
        "https://github.com/deepjavalibrary/djl-serving/blob/d21927c4a692335fba62a87cc430a5fc00c5f790/serving/src/main/java/ai/djl/serving/util/ModelStore.java "
        "https://github.com/deepjavalibrary/djl-serving/blob/d21927c4a692335fba62a87cc430a5fc00c5f790/wlm/src/main/java/ai/djl/serving/wlm/LmiUtils.java "
        "https://github.com/deepjavalibrary/djl-serving/blob/d21927c4a692335fba62a87cc430a5fc00c5f790/engines/python/src/main/java/ai/djl/python/engine/PyModel.java"
    ),
)
def missing_model(unit: LintUnit) -> Iterator[Finding]:
    if unit.context.backend.id in ("djl-engine", "custom"):
        return
    if any(unit.config.get(key) for key in model_location().keys):
        return
    if any(source.directory is not None and _has_model_files(source.directory) for source in unit.sources):
        return
    kinds = {source.kind for source in unit.sources}
    advice = (
        "set HF_MODEL_ID (or OPTION_MODEL_ID)"
        if kinds <= {"env", "json"}
        else "add option.model_id=<hub id, s3:// prefix or local path>"
    )
    yield unit.finding(
        "LMI202",
        f"no model is named and no model files sit beside the configuration; {advice}, or package config.json "
        "and the weights with this file (the model directory)",
        line=None,
    )


@rule(
    code="LMI203",
    slug="ignored-env-var",
    severity="warning",
    summary="An environment variable this container does not read (TGI-style names on Neuron, TGI-only names).",
    why=(
        "Only the GPU images translate TGI variables such as MAX_BATCH_SIZE or SM_NUM_GPUS into LMI "
        "options; the Neuron image ignores them, and names like MAX_INPUT_LENGTH are read by no LMI image. A "
        "variable named like a Hub token that no huggingface_hub an image pins reads (HF_API_TOKEN, "
        "HUGGINGFACE_TOKEN; the names each release reads are generated from its code into "
        "data/hub_token_variables.json) is no token either: downloads run without one."
    ),
    bad=Example(
        "HF_MODEL_ID=meta-llama/Llama-3.1-8B\nOPTION_ROLLING_BATCH=auto\nSM_NUM_GPUS=2\n",
        kind="env",
        args={"backend": "transformers-neuronx"},
    ),
    good=Example(
        "HF_MODEL_ID=meta-llama/Llama-3.1-8B\nOPTION_ROLLING_BATCH=auto\nTENSOR_PARALLEL_DEGREE=2\n",
        kind="env",
        args={"backend": "transformers-neuronx"},
    ),
    source=(
        "djl-serving.md §1.1 (translateTGIToLMI runs only in the GPU entrypoint), §10.3 — "
        "https://github.com/deepjavalibrary/djl-serving/blob/d21927c4a692335fba62a87cc430a5fc00c5f790/serving/docker/dockerd-entrypoint-with-cuda-compat.sh "
        "https://github.com/deepjavalibrary/djl-serving/blob/afece25dd0cab637d771d061c284747bdb0f736c/serving/docker/dockerd-entrypoint.sh "
        "https://github.com/huggingface/huggingface_hub/blob/v0.25.2/src/huggingface_hub/utils/_token.py#L114"
    ),
)
def ignored_env_var(unit: LintUnit) -> Iterator[Finding]:
    context = unit.context
    applied = {name for name, _, _ in unit.applied_translations}
    present = {entry.name for source in unit.sources if source.env for entry in source.env.entries}
    own_handler = context.backend.id in ("custom", "djl-engine")  # it may read any variable itself
    for source in unit.sources:
        if source.env is None:
            continue
        for entry in source.env.entries:
            mapping = classify_env(entry.name)
            if (unread := _unread_hub_token(entry.name)) is not None:
                yield unit.finding("LMI203", unread, path=source.path, line=entry.line, key=entry.name)
            elif mapping.kind == "foreign" and mapping.detail:
                yield unit.finding(
                    "LMI203",
                    f"{entry.name} is not read by any LMI image ({mapping.detail['source'].split(';')[0]}); use {mapping.detail['instead']}",
                    path=source.path,
                    line=entry.line,
                    key=entry.name,
                )
            elif mapping.kind == "unknown" and (spelled := _variable_in_other_case(entry.name)):
                yield unit.finding(
                    "LMI203",
                    f"{entry.name} is not a variable the container reads: variable names are case-sensitive "
                    f"— write {spelled}",
                    path=source.path,
                    line=entry.line,
                    key=entry.name,
                )
            elif not own_handler and (instead := _meant_option_variable(entry.name, mapping.kind)):
                yield unit.finding(
                    "LMI203",
                    f"{entry.name} {_NOT_READ[entry.name.startswith('ARGS_')]}; set {instead} instead",
                    path=source.path,
                    line=entry.line,
                    key=entry.name,
                )
            elif mapping.kind == "tgi" and entry.name not in applied and mapping.detail:
                target = mapping.detail["target"]
                if target in present:
                    why = f"{target} is set too, so the translation is skipped"
                elif context.accelerator == "neuron":
                    why = "the Neuron image does not translate TGI variables"
                else:
                    why = f"the translation exists only from LMI {mapping.detail['since']}"
                yield unit.finding(
                    "LMI203",
                    f"{entry.name} is ignored: {why} ({context.describe()}); set {target} instead",
                    path=source.path,
                    line=entry.line,
                    key=entry.name,
                )


def _unread_hub_token(name: str) -> str | None:
    """Why a variable named like a Hub token (``HF_API_TOKEN``) is none: no pinned huggingface_hub reads it
    (``data/hub_token_variables.json``, generated from their code); None for a name one reads."""
    from lmi_config.knowledge.environment import HUB_TOKEN_LIKE, hub_token_names

    read = hub_token_names()
    if not HUB_TOKEN_LIKE.fullmatch(name) or name in read:
        return None
    names = " or ".join(sorted(read, key=lambda known: known != "HF_TOKEN"))
    where = " ".join(sorted(set(read.values())))
    return (
        f"{name} is not a variable the image's huggingface_hub reads a token from (it reads {names}: {where}): "
        f"downloads run without a token, and a gated model fails with 401 — name it HF_TOKEN"
    )


_NOT_READ = {
    False: "is not a variable the container reads (it reads OPTION_*, ARGS_*, SERVING_* and a few named ones)",
    True: "goes to the model's Java arguments, which the Python handler never sees",
}


def _variable_in_other_case(name: str) -> str | None:
    """The upper-case variable the container reads that ``name`` spells in other letter cases
    (``Hf_Model_Id`` → ``HF_MODEL_ID``, ``option_dtype`` → ``OPTION_DTYPE``); None otherwise.
    The entrypoint and ModelInfo match names and the ``OPTION_`` prefix exactly."""
    upper = name.upper()
    if upper == name:
        return None
    mapping = classify_env(upper)
    if mapping.kind != "config" or mapping.key is None:
        return None
    known = mapping.key in known_keys_set() or not mapping.key.startswith("option.")
    return upper if known else None


def _meant_option_variable(name: str, kind: str) -> str | None:
    """``OPTION_<NAME>`` for a variable the container does not read whose name is an option's
    (``MAX_ROLLING_BATCH_SIZE``, ``ARGS_MAX_ROLLING_BATCH_SIZE``), else None."""
    if kind == "unknown" and re.fullmatch(r"[A-Z][A-Z0-9_]*", name):
        rest = name
    elif kind == "config" and name.startswith("ARGS_") and len(name) > len("ARGS_"):
        rest = name[len("ARGS_") :]
        if rest.lower() in catalogue():
            return None  # a model-level key the Java side reads from the arguments too
    else:
        return None
    if "option." + rest.lower() not in known_keys_set():
        return None
    return "HF_MODEL_ID" if rest == "MODEL_ID" else "OPTION_" + rest.upper()


@rule(
    code="LMI204",
    slug="shadowed-setting",
    severity="warning",
    summary="The same setting is given twice (file and env, or two variables) with different values.",
    why=(
        "The server keeps serving.properties over OPTION_* variables (putIfAbsent), SAGEMAKER_* "
        "variables override both, and TENSOR_PARALLEL_DEGREE only fills a missing option — the losing "
        "value looks set but is not used."
    ),
    bad=Example(
        "option.model_id=gpt2\noption.tensor_parallel_degree=4\n",
        paired_env="OPTION_TENSOR_PARALLEL_DEGREE=8\n",
    ),
    good=Example("option.model_id=gpt2\noption.tensor_parallel_degree=4\n", paired_env="OPTION_DTYPE=bf16\n"),
    source=(
        "djl-serving.md §1.4, §2 (ModelInfo.loadServingProperties putIfAbsent; SageMakerCompatibility overwrites) — "
        "https://github.com/deepjavalibrary/djl-serving/blob/d21927c4a692335fba62a87cc430a5fc00c5f790/wlm/src/main/java/ai/djl/serving/wlm/ModelInfo.java "
        "https://github.com/deepjavalibrary/djl-serving/blob/d21927c4a692335fba62a87cc430a5fc00c5f790/wlm/src/main/java/ai/djl/serving/wlm/util/SageMakerCompatibility.java"
    ),
)
def shadowed_setting(unit: LintUnit) -> Iterator[Finding]:
    for key, settings in unit.config.candidates.items():
        winner = unit.config.settings[key]
        for setting in settings:
            if (
                setting is winner
                or setting.origin.path == winner.origin.path
                and setting.origin.kind == "properties"
            ):
                continue  # duplicates inside one file are duplicate-key's business
            if (
                setting.value.strip() == winner.value.strip()
                or is_placeholder(setting.value)
                or is_placeholder(winner.value)
            ):
                continue
            loser_name = setting.origin.variable or setting.key
            winner_name = winner.origin.variable or winner.key
            if key == "option.model_id" and "HF_MODEL_ID" in (
                setting.origin.variable,
                winner.origin.variable,
            ):
                # HF_MODEL_ID with a Hub id gets its own generated model directory (ModelStore), so the
                # container may load it as a second model rather than override the file
                yield unit.finding(
                    "LMI204",
                    f"option.model_id={winner.value.strip()!r} ({winner.origin.describe()}) and HF_MODEL_ID="
                    f"{(setting if setting.origin.variable == 'HF_MODEL_ID' else winner).value.strip()!r} name different "
                    "models: HF_MODEL_ID makes the container create its own model directory, so it may load two "
                    "models — set only one of them",
                    setting=setting,
                )
                continue
            yield unit.finding(
                "LMI204",
                f"{loser_name}={setting.value.strip()!r} is not used: {winner_name}={winner.value.strip()!r} "
                f"({winner.origin.describe()}) wins for {key}; remove one of them",
                setting=setting,
            )


_HUB_ID = re.compile(r"[A-Za-z0-9][\w.\-]*/[\w.\-]+")


@rule(
    code="LMI205",
    slug="gated-model-without-token",
    severity="warning",
    summary="A gated Hub model (Llama, Mistral, Gemma) and an environment with no Hugging Face token.",
    why=(
        "Meta's, Mistral AI's and Google's Gemma repositories on the Hugging Face Hub are gated: without a token "
        "of an account that was granted access, the container's download stops with '401 Client Error … Cannot "
        "access gated repo' after the endpoint has started. Checked where the files describe the container's "
        "environment (an env file or SageMaker Environment JSON); the token itself belongs in the deployment's "
        "secret store, never in these files. A token set under a name nothing in the image reads is "
        "gated-model-token-unread (LMI640) instead, an error."
    ),
    bad=Example("HF_MODEL_ID=meta-llama/Llama-3.1-8B-Instruct\nOPTION_ROLLING_BATCH=vllm\n", kind="env"),
    good=Example(
        "HF_MODEL_ID=Qwen/Qwen2.5-7B-Instruct\nOPTION_ROLLING_BATCH=vllm\n",
        kind="env",
    ),
    source=(
        "https://huggingface.co/docs/hub/models-gated (gated repositories); lmi_config/data/models.json "
        "gated_repositories (https://github.com/PrimeIntellect-ai/prime-diloco/issues/108, "
        "https://github.com/neuralmagic/sparseml/pull/2249, https://github.com/city96/ComfyUI_ExtraModels/issues/99)"
    ),
)
def gated_model_without_token(unit: LintUnit) -> Iterator[Finding]:
    from lmi_config.knowledge.environment import hub_token_names
    from lmi_config.knowledge.models import is_gated

    setting = unit.config.settings.get("option.model_id")
    if setting is None:
        return
    model_id = setting.value.strip()
    if not _HUB_ID.fullmatch(model_id) or not is_gated(model_id):
        return
    environments = [source for source in unit.sources if source.env is not None]
    if not environments:
        return  # serving.properties alone says nothing about the container's environment
    tokens = hub_token_names()  # what huggingface_hub reads: HF_API_TOKEN is no token
    if any(entry.name in tokens for source in environments for entry in source.env.entries):  # type: ignore[union-attr]
        return
    from lmi_config.rules.hub_token import unread_token

    if unread_token(unit) is not None:
        return  # a token under a name nothing reads: gated-model-token-unread says so, as an error
    yield unit.finding(
        "LMI205",
        f"{model_id} is a gated Hub repository and this environment has no HF_TOKEN: the download fails with 401 "
        "— give the container HF_TOKEN of an account granted access (from a secret store at deploy time), or "
        "point option.model_id at a copy in S3",
        setting=setting,
    )
