"""The schema of every data file, as pydantic models (used by the test suite and by anyone editing
the data; the lint path never imports this module, so pydantic stays off it).

Every entry that states a fact has a ``source``; unknown keys are refused, so a typo in a data file
fails the tests instead of being ignored.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from lmi_config.knowledge.attention_schemas import TrtllmAttentionFile, VllmFlashAttnFile
from lmi_config.knowledge.capability_schemas import GpuDevicesFile, RopeScalingFile, VllmCapabilitiesFile
from lmi_config.knowledge.catalog_schemas import GeneratedModelsFile, ModelIdentitiesFile
from lmi_config.knowledge.check_schemas import (
    VllmAttentionFile,
    VllmCheckCoverageFile,
    VllmCheckReviewFile,
    VllmChecksFile,
    VllmModelClassesFile,
    VllmQuantConfigsFile,
    VllmRunnerRefusalsFile,
)
from lmi_config.knowledge.engine_limit_schemas import VllmCudaGraphsFile
from lmi_config.knowledge.engine_schemas import EngineRegistriesFile, NeuronRopeFile
from lmi_config.knowledge.nxd_loader_schemas import NxdLoaderFile
from lmi_config.knowledge.perf_schemas import (
    LatencyTargetsFile,
    PerfCaveatsFile,
    PerfDevicesFile,
    PerfFitFile,
)
from lmi_config.knowledge.price_schemas import OnDemandPrices
from lmi_config.knowledge.runtime_schemas import (
    HubTokenVariablesFile,
    VllmCudaArchsFile,
    WorkerEnvironmentFile,
)
from lmi_config.knowledge.schema_base import Sourced, Strict

Severity = Literal["error", "warning", "info"]
# a source in djl-serving's code: a file and line at a commit
DJL_SOURCE_URL = r"^https://github\.com/deepjavalibrary/djl-serving/blob/(?P<commit>[0-9a-f]{40})/\S+#L\d+$"
Accelerator = Literal["neuron", "gpu", "cpu", "any"]


class Value(Sourced):
    """A number or text with its evidence."""

    value: Any
    until: str | None = None
    note: str | None = None


# --- backends.json -----------------------------------------------------------------------------


class RenderBase(Strict):
    since: str | None
    until: str | None
    options: dict[str, str]


class Render(Sourced):
    base: list[RenderBase]
    batch_key: str | None = None
    sequence_key: str | None = None


class PropertiesClasses(Sourced):
    """The generated properties classes a backend's handler path builds, and the modules that
    build them (tests check the two against data/djl_properties.json)."""

    classes: list[str]
    modules: list[str]


class BackendRow(Sourced):
    id: str
    aliases: list[str]
    accelerator: Accelerator
    image: str | None
    reads: list[str]
    engine_args: str | None
    engine_args_since: str | None = None
    summary: str
    feature: str | None
    render: Render | None = None
    properties_classes: PropertiesClasses | None = None
    extra_allowed: bool = False
    since: str | None = None


class EntryPoint(Sourced):
    module: str
    backend: str | None
    since: str | None
    until: str | None
    renamed_to: str | None = None
    never_existed: bool = False


class Engine(Sourced):
    name: str
    backend: str | None
    until: str | None = None


class ModelLocation(Sourced):
    keys: list[str]
    artifact_pattern: str


class InferenceStep(Sourced):
    model_config = ConfigDict(
        extra="allow", frozen=True, protected_namespaces=()
    )  # a named step's own table names
    step: Literal["entry_point", "engine", "other_engine", "key_scores"] | None = None
    when: dict[str, list[str]] | None = None
    when_accelerator: Accelerator | None = None
    unless_accelerator: Accelerator | None = None
    backend: str | None = None
    on_neuron: str | None = None
    assumed: bool = False
    reason: str | None = None


class Inference(Sourced):
    steps: list[InferenceStep]


class BackendsFile(Sourced):
    backends: list[BackendRow]
    inference: Inference
    entry_points: list[EntryPoint]
    engines: list[Engine]
    model_location: ModelLocation


# --- conflicts.json ----------------------------------------------------------------------------


class Condition(Strict):
    key: str | list[str] | None = None
    op: (
        Literal[
            "absent", "present", "not_true", "in", "not_in", "ne", "gt", "differs_from",
            "absent_or_not_in", "effective_in", "effective_not_in",
        ]
        | None
    ) = None  # fmt: skip
    value: Any = None
    values: list[str] | None = None
    other: str | None = None  # differs_from: the key it is compared with
    anchor: bool = False
    any: list[Condition] | None = None  # holds when one of these holds

    @model_validator(mode="after")
    def _a_key_and_op_or_alternatives(self) -> Condition:
        if (self.any is None) == (self.key is None or self.op is None):
            raise ValueError("a condition has key and op, or any: [conditions]")
        return self


class ValidatorLink(Strict):
    """The container's own check a combination stands for (data/djl_properties.json)."""

    class_: str = Field(alias="class")
    name: str
    message: str  # the start of the outcome's message


class Conflict(Sourced):
    id: str
    severity: Severity
    all: list[Condition]
    message: str
    fix: str
    backends: list[str] | None = None
    since: str | None = None
    until: str | None = None
    validator: ValidatorLink | None = None


class ConflictsFile(Sourced):
    conflicts: list[Conflict]


# --- container_shape.json ----------------------------------------------------------------------


class LargeBatch(Strict):
    min_max_rolling_batch_size: int
    becomes: str


class RollingBatchRow(Sourced):
    backends: list[str]
    since: str | None
    until: str | None
    absent: str
    auto: str
    auto_large_batch: LargeBatch | None
    async_mode: bool


class KeyList(Sourced):
    keys: list[str]


class PrecompiledKeys(Sourced):
    keys: list[str]
    note: str | None = None


class ModuleList(Sourced):
    modules: list[str]


class RecommendedBatch(Sourced):
    by_rolling_batch: dict[str, int]
    otherwise: int


class BatchRow(Sourced):
    backends: list[str]
    modes: list[Literal["rolling", "async", "dynamic"]]
    keys: list[str]
    render_keys: list[str]
    default: int | Literal["recommended_max_rolling_batch_size"]


class SequenceRow(Sourced):
    backends: list[str]
    keys: list[str]
    render_key: str | None
    default: Literal["neuron", "model_max"]
    note: str | None = None


class HandlerRollingBatchRow(Sourced):
    """What a Python handler runs for each option.rolling_batch value it accepts."""

    backends: list[str]
    since: str | None
    until: str | None
    runs: dict[str, str]
    otherwise: str


class ContainerShapeFile(Sourced):
    rolling_batch: list[RollingBatchRow]
    handler_rolling_batch: list[HandlerRollingBatchRow]
    dynamic_batching_forces_disable: KeyList
    async_entry_points: ModuleList
    precompiled_artifacts: PrecompiledKeys
    recommended_max_rolling_batch_size: RecommendedBatch
    batch: list[BatchRow]
    sequence: list[SequenceRow]


# --- env_vars.json -----------------------------------------------------------------------------


class PrefixRule(Sourced):
    prefix: str
    target: str
    role: Literal["fill", "global", "override", "default", "generated"]
    lowercase_if: str


class NamedVariable(Sourced):
    name: str
    key: str
    role: Literal["fill", "global", "override", "default", "generated"]
    written_for_key: bool = False
    also: list[str] | None = None


class Pattern(Sourced):
    pattern: str


class Translation(Sourced):
    name: str
    target: str
    since: str
    invert_bool: bool = False
    target_trtllm: str | None = None


class Foreign(Sourced):
    name: str
    instead: str


class Secret(Sourced):
    name: str
    value_regex: str | None = None


class SecretPattern(Sourced):
    name: str
    regex: str


class RuntimeSetting(Sourced):
    name: str
    effect: str
    values: list[str]


class SupersededVariable(Sourced):
    name: str
    by: str  # the variable that wins over it when both are set


class EnvironmentLimits(Sourced):
    max_entries: int
    max_value_length: int
    key_pattern: str


class EnvVarsFile(Sourced):
    prefix_rules: list[PrefixRule]
    variables: list[NamedVariable]
    process_env: list[Pattern]
    tgi_translations: list[Translation]
    foreign_variables: list[Foreign]
    secrets: list[Secret]
    secret_patterns: list[SecretPattern]
    runtime_settings: list[RuntimeSetting]
    superseded_variables: list[SupersededVariable]
    sagemaker_environment_limits: EnvironmentLimits


# --- images.json -------------------------------------------------------------------------------


class Framework(Sourced):
    model_config = ConfigDict(extra="allow", frozen=True, protected_namespaces=())
    framework: str


class Registry(Sourced):
    region: str
    account: str
    domain: str


class Image(Sourced):
    model_config = ConfigDict(extra="allow", frozen=True, protected_namespaces=())
    framework: str
    djl_version: str
    tag: str | None
    published: bool


class ImagesFile(Sourced):
    model_config = ConfigDict(extra="allow", frozen=True, protected_namespaces=())
    repository: str
    frameworks: list[Framework]
    registries: list[Registry]
    images: list[Image]


# --- instances.json ----------------------------------------------------------------------------


class InstanceRow(Sourced):
    model_config = ConfigDict(
        extra="allow", frozen=True, protected_namespaces=()
    )  # prices and other optional facts
    instance_type: str
    accelerator: Literal["neuron", "gpu", "cpu"]
    family: str
    platform: str
    accelerator_name: str | None
    num_devices: int = Field(ge=0)
    physical_cores_per_device: int | None
    default_lnc: int | None
    device_memory_gib: float = Field(ge=0)
    host_memory_gib: float | None


class InstancesFile(Sourced):
    instances: list[InstanceRow]
    first_neuron_sdk: dict[str, Value] = {}  # platform -> the first Neuron SDK that runs on it
    on_demand_prices: OnDemandPrices


# --- memory.json -------------------------------------------------------------------------------


class MemoryFile(Sourced):
    model_config = ConfigDict(extra="forbid", frozen=True, protected_namespaces=())
    budget: dict[str, str]
    neuron: dict[str, dict[str, Any]]
    dtype_bytes: dict[str, float | str]
    host: dict[str, Value]
    loading: dict[str, Value]
    headroom_warning_fraction: Value
    container_defaults: dict[str, Value]


# --- models.json -------------------------------------------------------------------------------


class ModelRow(Sourced):
    model_config = ConfigDict(extra="allow", frozen=True, protected_namespaces=())
    model_id: str
    aliases: list[str]
    config: dict[str, Any]
    total_params: int | None


class Family(Sourced):
    values: list[str]


class GatedRepository(Sourced):
    prefix: str


class ModelsFile(Sourced):
    models: list[ModelRow]
    type_defaults: dict[str, dict[str, Any]]
    architecture_families: dict[str, Family]
    gated_repositories: list[GatedRepository]


# --- options.json ------------------------------------------------------------------------------


class FromCode(Strict):
    facts: list[Literal["since", "until", "type", "allowed"]]
    source: str = Field(pattern=DJL_SOURCE_URL)


class OptionRow(Sourced):
    key: str
    backends: list[str]
    kind: Literal["lmi", "passthrough", "server"]
    type: str
    allowed: list[Any] | None
    min: float | None
    max: float | None
    default: Any
    since: str | None
    until: str | None
    deprecated: str | None
    aliases: list[str]
    env: str | None
    summary: str
    doc: str | None
    note: str | None
    case_insensitive: bool = False
    from_code: FromCode | None = None  # facts scripts/sync_options_from_code.py took from the code
    hand_written: str | None = None  # why the code does not give this entry's facts


class Synonyms(Sourced):
    values: dict[str, str]


class OptionsFile(Sourced):
    backends: dict[str, Any]
    options: list[OptionRow]
    value_synonyms: Synonyms


# --- releases.json -----------------------------------------------------------------------------


class ReleaseRow(Sourced):
    djl: str
    lmi: str | None
    vllm: str | None
    features: dict[str, list[str]]


class ReleasesFile(Sourced):
    releases: list[ReleaseRow]
    defaults: dict[str, dict[str, Any]]


# --- tp_rules.json -----------------------------------------------------------------------------


class TpRule(Sourced):
    platform: str
    backends: list[str]
    kind: Literal[
        "runtime", "documented", "observed", "capacity", "heads", "kv_heads", "unsupported", "known_issue"
    ]
    degrees: list[int] | None = None
    multiple_of: int | None = None
    message: str | None = None
    note: str | None = None
    policy: Literal["error", "pad", "warn", "none"] | None = None
    model_types: list[str] | None = None
    kv_rule: str | None = None
    verified: bool | None = None
    min_neuron_sdk: str | None = None
    condition: str | None = None
    nxdi_version: str | None = None


class TpRulesFile(Sourced):
    rules: list[TpRule]


# --- generated files ---------------------------------------------------------------------------


class EngineArgsFile(Sourced):
    model_config = ConfigDict(extra="allow", frozen=True, protected_namespaces=())
    versions: dict[str, dict[str, Any]]


class AllocatorRounding(Strict):
    why: str
    small_request_mib: Value
    large_threshold_mib: Value
    mid_segment_mib: Value
    granularity_mib: Value


class ProfilerScheme(Sourced):
    counts_non_torch: bool
    counts_cuda_context: bool
    counts_allocator_cache: bool


class VllmMemoryFile(Sourced):
    model_config = ConfigDict(extra="allow", frozen=True, protected_namespaces=())
    versions: dict[str, dict[str, Any]]
    error_margin_fraction: Value
    allocator: AllocatorRounding
    profilers: dict[str, ProfilerScheme | str]  # "why" and one entry per scheme


# --- deploy.json, sagemaker_api.json ----------------------------------------------------------


class SourcedPolicy(Sourced):
    model_config = ConfigDict(extra="allow", frozen=True, protected_namespaces=())  # the policy's own numbers


class DeployFile(Strict):
    about: str
    volume: SourcedPolicy
    wait: SourcedPolicy
    logs: SourcedPolicy
    autoscaling: SourcedPolicy


class SagemakerApiFile(Sourced):
    model_config = ConfigDict(extra="allow", frozen=True, protected_namespaces=())
    botocore_version: str
    names: dict[str, dict[str, Any]]
    environment: dict[str, Any]
    variant: dict[str, dict[str, Any]]
    instance_types: list[str]
    endpoint_waiter: SourcedPolicy


# --- search.json -------------------------------------------------------------------------------


class SeedGridSection(Sourced):
    batch_sizes: list[int]
    minimum_sequence_length: int = Field(gt=0)
    minimum_tensor_parallel_size: int = Field(gt=0)
    order: str
    note: str


class SearchCommands(Sourced):
    export: list[str]
    load_classes: dict[str, str]
    load: str


class CacheFormat(Sourced):
    fields: list[str]
    instance_type_of_family: dict[str, str] | None = None
    auto_cast_types: list[str] | None = None


class CacheConfigFormats(Strict):
    current: CacheFormat
    legacy: CacheFormat


class SearchMargin(Sourced):
    fraction: float = Field(gt=0, lt=1)
    why: str


class SearchTimeouts(Sourced):
    export_minimum_seconds: int = Field(gt=0)
    load_seconds: int = Field(gt=0)
    anchor_export_seconds: int = Field(gt=0)
    why: str


class SearchDisk(Sourced):
    free_factor: float = Field(gt=0)
    why: str


class FailureClassRow(Sourced):
    class_: Literal["device-oom", "host-oom", "compiler-error"] = Field(alias="class")
    meaning: str
    patterns: list[str]
    signals: list[int] = Field(default_factory=list)


class SearchFile(Sourced):
    seed_grid: SeedGridSection
    commands: SearchCommands
    cache_config: CacheConfigFormats
    memory_error_margin: SearchMargin
    timeouts: SearchTimeouts
    disk: SearchDisk
    failure_classes: list[FailureClassRow]


# --- djl_properties.json (generated by scripts/gen_djl_options.py) ------------------------------


class DjlReleaseRow(Strict):
    branch: str
    commit: str = Field(pattern=r"^[0-9a-f]{40}$")
    djl: str | None
    lmi: str | None
    in_releases_json: bool


class _DjlRanged(Strict):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    first: str
    last: str
    source: str = Field(pattern=DJL_SOURCE_URL)


class DjlClassRow(_DjlRanged):
    class_name: str = Field(alias="class")
    module: str
    bases: list[str]
    extra: Literal["ignore", "allow", "forbid"]
    extra_declared_here: bool
    populate_by_name: bool
    backends: list[str]


class DjlFieldRow(_DjlRanged):
    class_name: str = Field(alias="class")
    field: str
    annotation: str
    allowed: list[Any] | None
    alias: str | None
    required: bool
    default: Any
    default_expression: str | None
    default_env: str | None


class DjlOutcome(Strict):
    kind: Literal["error", "warning", "coercion"]
    exception: str | None
    message: str | None
    when: list[str]
    via: str | None
    subject: str | None
    allowed_values: list[Any] | None
    case_insensitive: bool
    coerces_to: Any


class DjlValidatorRow(_DjlRanged):
    class_name: str = Field(alias="class")
    name: str
    decorator: Literal["field_validator", "model_validator", "validator", "root_validator", "method"]
    fields: list[str]
    mode: str | None
    reads: list[str]
    outcomes: list[DjlOutcome]


class DjlExtraKeyRow(_DjlRanged):
    class_name: str = Field(alias="class")
    key: str
    methods: list[str]
    default: Any
    conversion: Literal["int", "float", "json", "bool"] | None


class DjlModuleRow(_DjlRanged):
    module: str
    handler: bool
    instantiates: list[str]


class DjlJavaItem(Strict):
    key: str | None = None
    name: str | None = None
    variable: str | None = None
    call: str | None = None
    value: Any = None
    default: Any = None
    when: list[str]


class DjlRecommenderRow(_DjlRanged):
    method: str
    reads: list[DjlJavaItem]
    writes: list[DjlJavaItem]
    assignments: list[DjlJavaItem]
    environment: list[DjlJavaItem]


class DjlRecommenderMapRow(_DjlRanged):
    name: str
    entries: dict[str, str]


class DjlRecommenderDefaultRow(_DjlRanged):
    key: str
    rolling_batch: str
    value: Any


DJL_ENTRY_LISTS = (
    "classes", "fields", "validators", "extra_keys", "modules",
    "recommender", "recommender_maps", "recommender_defaults",
)  # fmt: skip


class DjlPropertiesFile(Strict):
    """The generated catalogue: every range names known branches in order, every source is a
    GitHub URL at the commit of the range's first branch."""

    source: str
    releases: list[DjlReleaseRow]
    classes: list[DjlClassRow]
    fields: list[DjlFieldRow]
    validators: list[DjlValidatorRow]
    extra_keys: list[DjlExtraKeyRow]
    modules: list[DjlModuleRow]
    recommender: list[DjlRecommenderRow]
    recommender_maps: list[DjlRecommenderMapRow]
    recommender_defaults: list[DjlRecommenderDefaultRow]

    @model_validator(mode="after")
    def _ranges_and_sources_are_consistent(self) -> DjlPropertiesFile:
        order = {release.branch: index for index, release in enumerate(self.releases)}
        commits = {release.branch: release.commit for release in self.releases}
        for name in DJL_ENTRY_LISTS:
            for entry in getattr(self, name):
                if entry.first not in order or entry.last not in order:
                    raise ValueError(f"{name}: unknown branch in {entry.first}..{entry.last}")
                if order[entry.first] > order[entry.last]:
                    raise ValueError(f"{name}: {entry.first} comes after {entry.last}")
                match = re.match(DJL_SOURCE_URL, entry.source)
                if match is None or match["commit"] != commits[entry.first]:
                    raise ValueError(f"{name}: {entry.source} is not at the commit of {entry.first}")
        return self


# --- container_checks.json (generated by scripts/gen_container_checks.py) -------------------------


class ContainerCheck(Strict):
    """What one class does with a key's value (see knowledge/container_options.py)."""

    class_: str = Field(alias="class")
    field: str
    kind: Literal["int", "float", "bool", "values", "text", "literal", "json"]
    accepted: list[str] | None  # literal / json: the parsed types that pass (None: any)
    case_insensitive: bool
    message: str | None
    coerced: list[str] | None
    coerce_to: Any
    coerce_message: str | None
    pydantic: Literal[0, 1, 2]
    source: str = Field(pattern=DJL_SOURCE_URL)


class ContainerParser(Strict):
    """A ``before`` validator that parses the raw string (``ast.literal_eval`` / ``json.loads``)."""

    class_: str = Field(alias="class")
    field: str
    kind: Literal["literal", "json"]
    accepted: list[str] | None
    message: str | None
    source: str = Field(pattern=DJL_SOURCE_URL)
    first: str
    last: str


class ContainerRollingBatchPath(Strict):
    """A handler's branch for one ``rolling_batch`` value and the properties classes it builds."""

    module: str
    rolling_batch: str
    classes: list[str]
    source: str = Field(pattern=DJL_SOURCE_URL)
    first: str
    last: str


class ContainerChecksFile(Sourced):
    """Per backend: runs of branches ``[first, last, …]`` with check numbers, validator messages;
    per handler module: runs of branches."""

    branches: list[tuple[str, str | None, str | None]]
    checks: list[ContainerCheck]
    keys: dict[str, dict[str, list[tuple[str, str, list[int]]]]]
    validators: dict[str, dict[str, list[tuple[str, str, list[str]]]]]
    handlers: dict[str, list[tuple[str, str]]]
    parsers: list[ContainerParser] = []
    rolling_batch_paths: list[ContainerRollingBatchPath] = []
    rolling_batch_keys: dict[str, dict[str, dict[str, list[tuple[str, str, list[int]]]]]] = {}

    @model_validator(mode="after")
    def _runs_name_branches_and_checks(self) -> ContainerChecksFile:
        order = {row[0]: index for index, row in enumerate(self.branches)}
        runs = [run for per_key in self.keys.values() for found in per_key.values() for run in found]
        runs += [run for per_name in self.validators.values() for found in per_name.values() for run in found]  # type: ignore[misc]
        runs += [run for found in self.handlers.values() for run in found]  # type: ignore[misc]
        runs += [
            run
            for per_value in self.rolling_batch_keys.values()
            for per_key in per_value.values()
            for found in per_key.values()
            for run in found
        ]
        for run in runs:
            if run[0] not in order or run[1] not in order or order[run[0]] > order[run[1]]:
                raise ValueError(f"run {run[0]}..{run[1]} does not name branches in order")
        for per_key in self.keys.values():
            for found in per_key.values():
                if any(not 0 <= number < len(self.checks) for run in found for number in run[2]):
                    raise ValueError("a run names a check that is not in the table")
        return self


# --- image_pins.json and transformers_model_types.json (generated) --------------------------------


class _PinnedRange(Strict):
    first: str
    last: str
    source: str = Field(pattern=DJL_SOURCE_URL)


class VenvPins(Strict):
    pins: dict[str, str]
    ranges: dict[str, str]


class ImagePinsRow(_PinnedRange):
    image: Literal["djl-lmi", "djl-neuronx", "djl-tensorrtllm", "djl-deepspeed"]
    dockerfile: str
    pins: dict[str, str]
    ranges: dict[str, str]
    venvs: dict[str, VenvPins]  # a backend's own virtual environment (0.32's vLLM and lmi-dist)


class NeuronModelTypesRow(_PinnedRange):
    loader: Literal["tnx", "optimum"]
    model_types: list[str]


class ImagePinsFile(Sourced):
    branches: list[tuple[str, str | None, str | None]]
    images: list[ImagePinsRow]
    neuron_model_types: list[NeuronModelTypesRow]


class VersionSpan(Strict):
    first: str
    last: str


class TransformersRangeTop(Sourced):
    newest: str
    bounded: bool
    model_types: list[str] | None


class TransformersRangeTopsFile(Sourced):
    ranges: dict[str, TransformersRangeTop]


class TransformersModelTypesFile(Sourced):
    versions: dict[str, str]  # version -> the file that lists its model types
    model_types: dict[str, VersionSpan]
    pipeline_tasks: dict[str, VersionSpan]
    pipeline_tasks_source: str

    @model_validator(mode="after")
    def _spans_name_listed_versions(self) -> TransformersModelTypesFile:
        for name, span in {**self.model_types, **self.pipeline_tasks}.items():
            if span.first not in self.versions or span.last not in self.versions:
                raise ValueError(f"{name}: {span.first}..{span.last} names a version that is not listed")
        return self


class VllmLimitsRow(Strict):
    max_lora_rank: list[int]
    message: str
    source: str = Field(pattern=r"^https://github\.com/vllm-project/vllm/blob/v[\w.]+/\S+$")


class VllmLimitsFile(Sourced):
    versions: dict[str, VllmLimitsRow]


SCHEMAS: dict[str, Any] = {
    "backends.json": BackendsFile,
    "conflicts.json": ConflictsFile,
    "container_checks.json": ContainerChecksFile,
    "container_shape.json": ContainerShapeFile,
    "deploy.json": DeployFile,
    "djl_properties.json": DjlPropertiesFile,
    "env_vars.json": EnvVarsFile,
    "image_pins.json": ImagePinsFile,
    "images.json": ImagesFile,
    "instances.json": InstancesFile,
    "memory.json": MemoryFile,
    "models.json": ModelsFile,
    "models_generated.json": GeneratedModelsFile,
    "model_identities.json": ModelIdentitiesFile,
    "neuron_rope_scaling.json": NeuronRopeFile,
    "rope_scaling.json": RopeScalingFile,
    "options.json": OptionsFile,
    "perf_caveats.json": PerfCaveatsFile,
    "latency_targets.json": LatencyTargetsFile,
    "perf_devices.json": PerfDevicesFile,
    "perf_fit.json": PerfFitFile,
    "releases.json": ReleasesFile,
    "sagemaker_api.json": SagemakerApiFile,
    "search.json": SearchFile,
    "tp_rules.json": TpRulesFile,
    "transformers_model_types.json": TransformersModelTypesFile,
    "transformers_range_tops.json": TransformersRangeTopsFile,
    "vllm_engine_args.json": EngineArgsFile,
    "vllm_limits.json": VllmLimitsFile,
    "vllm_cuda_graphs.json": VllmCudaGraphsFile,
    "vllm_memory.json": VllmMemoryFile,
    "gpu_devices.json": GpuDevicesFile,
    "vllm_capabilities.json": VllmCapabilitiesFile,
    "worker_environment.json": WorkerEnvironmentFile,
    "vllm_cuda_archs.json": VllmCudaArchsFile,
    "engine_registries.json": EngineRegistriesFile,
    "vllm_checks.json": VllmChecksFile,
    "vllm_check_review.json": VllmCheckReviewFile,
    "vllm_check_coverage.json": VllmCheckCoverageFile,
    "vllm_attention.json": VllmAttentionFile,
    "vllm_flash_attn.json": VllmFlashAttnFile,
    "trtllm_attention.json": TrtllmAttentionFile,
    "vllm_model_classes.json": VllmModelClassesFile,
    "vllm_quant_configs.json": VllmQuantConfigsFile,
    "vllm_runner_refusals.json": VllmRunnerRefusalsFile,
    "hub_token_variables.json": HubTokenVariablesFile,
    "nxd_loader.json": NxdLoaderFile,
}


def schema_for(name: str) -> type[BaseModel]:
    """The root model of a data file; KeyError for a file without one."""
    found: type[BaseModel] = SCHEMAS[name]
    return found
