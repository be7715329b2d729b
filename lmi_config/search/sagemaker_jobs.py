"""``search --on sagemaker``: the plan of jobs (one per shard), what each costs at most, and the
exact CreateTrainingJob requests.

Why training jobs and not processing jobs: the Neuron instance types a search needs are offered
to training jobs only — botocore's service model lists ``ml.trn1.2xlarge``, ``ml.trn1.32xlarge``,
``ml.trn1n.32xlarge`` and ``ml.trn2.48xlarge`` in ``TrainingInstanceType`` and no Neuron type in
``ProcessingInstanceType`` (read from the installed botocore at run time, not copied here). A
training job runs any image with our command (``AlgorithmSpecification.ContainerEntrypoint`` and
``ContainerArguments``), and its ``StoppingCondition.MaxRuntimeInSeconds`` (``--max-hours``) ends
it at the hour the cost bound assumes. No inf2 type is offered to training jobs; optimum-neuron
compiles for inf2 as trn1 (the cache-config's ``instance_type`` is ``trn1`` for both), so a
search of the trn1 targets runs on ml.trn1.

The job runs ``lmi-config search --shard K/N --results <s3 prefix>``: the same command a user
runs on a machine of their own (see :mod:`lmi_config.search.shard_run`).

Credentials (``--secret-env HF_TOKEN`` for a gated model) are copied from the coordinator's shell
into the job's ``Environment``, as ``deploy`` gives them to an endpoint: SageMaker stores them
with the job, and anyone allowed ``sagemaker:DescribeTrainingJob`` in the account can read them
back (the console shows them too). That is the one place they are; every line this command
prints, the journal and the S3 objects of the search hold the mask instead.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from lmi_config.errors import InputError
from lmi_config.search.job_image import JobImage, check_runs_on, choose_job_image
from lmi_config.search.job_package import CHANNEL, job_package
from lmi_config.search.order import order_arguments
from lmi_config.search.session import SearchOptions
from lmi_config.search.shard_run import JOB_NAME_VARIABLE
from lmi_config.search.shards import PlannedShard, plan_shards
from lmi_config.secrets import SECRET_NAMES_VARIABLE

if TYPE_CHECKING:
    from lmi_config.search.grid import Predictor, TrialGrid

JOB_PREFIX = "lmic"
WORK_DIRECTORY = "/opt/ml/lmi-config-search"  # on the job's own volume
VOLUME_GIB = 512  # exports of large models (weights + compiled graphs) per trial
PACKAGE_VARIABLE = "LMI_CONFIG_PACKAGE"
# the image has pip; the job installs the coordinator's own lmi-config (job_package.py: uploaded with
# the search, copied into the job by its input channel), then runs the shard
ENTRY_SCRIPT = f'pip install --quiet "${PACKAGE_VARIABLE}" && exec lmi-config "$@"'


@dataclass(frozen=True)
class RemoteRequest:
    """A search as SageMaker jobs (see ``lmi-config search --help``)."""

    search: SearchOptions
    instances: tuple[str, ...]
    max_jobs: int = 4
    max_hours: float = 24.0
    role: str | None = None
    s3_prefix: str | None = None
    image: str | None = None
    region: str | None = None
    endpoint_url: str | None = None
    secret_env: tuple[str, ...] = ()  # variables copied from this shell into every job, never shown
    optimum_neuron: str | None = None  # the version the jobs export with (default: the one installed here)
    stopping: bool = False  # --stop: only the job names are needed (no credential, no gated check)


@dataclass(frozen=True)
class PlannedJob:
    """One job: its shard, its name and its CreateTrainingJob request."""

    shard: PlannedShard
    name: str
    request: dict[str, Any]
    usd_per_hour: float | None


@dataclass
class JobPlan:
    """Every job of the search, the hours they may run and the most they may cost."""

    request: RemoteRequest
    search_tag: str
    region: str
    image: str
    image_reason: str = ""  # why this image (the optimum-neuron it ships, and how that was chosen)
    jobs: list[PlannedJob] = field(default_factory=list)
    idle: list[PlannedShard] = field(default_factory=list)  # nothing to try: no job is started
    secrets: dict[str, str] = field(default_factory=dict, repr=False)  # --secret-env: name -> value

    def secret_values(self) -> frozenset[str]:
        """The values that must never be printed or written anywhere but the jobs' Environment."""
        return frozenset(value for value in self.secrets.values() if value)

    def shown_request(self, job: PlannedJob) -> dict[str, Any]:
        """A job's CreateTrainingJob parameters as they may be printed: credentials masked."""
        from lmi_config.secrets import MASK

        environment = {
            name: MASK if name in self.secrets else value
            for name, value in job.request["Environment"].items()
        }
        return {**job.request, "Environment": environment}

    @property
    def instance_hours(self) -> float:
        return self.request.max_hours * len(self.jobs)

    @property
    def cost_bound_usd(self) -> float:
        """The jobs with a known price, each running its full --max-hours."""
        return sum((job.usd_per_hour or 0.0) * self.request.max_hours for job in self.jobs)

    @property
    def unpriced(self) -> list[str]:
        return sorted({job.shard.instance_type for job in self.jobs if job.usd_per_hour is None})


def training_instance_types() -> tuple[str, ...]:
    """The instance types CreateTrainingJob accepts, from the installed botocore's service model."""
    try:
        import botocore.session
    except ImportError:
        raise InputError("search --on sagemaker needs boto3: pip install 'lmi-config[aws]'") from None
    model = botocore.session.get_session().get_service_model("sagemaker")
    return tuple(model.shape_for("TrainingInstanceType").enum)


def split_s3(uri: str, option: str) -> tuple[str, str]:
    """(bucket, prefix) of ``s3://bucket/prefix``."""
    if not uri.startswith("s3://") or not uri[len("s3://") :].split("/", 1)[0]:
        raise InputError(f"{option} {uri}: give s3://BUCKET/PREFIX")
    bucket, _, prefix = uri[len("s3://") :].partition("/")
    return bucket, prefix.strip("/")


def search_tag(options: SearchOptions, s3_prefix: str) -> str:
    """A short digest naming the search's jobs: one model, strategy and results location."""
    text = "\0".join([options.model, options.strategy, s3_prefix.rstrip("/")])
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:8]


def job_base_name(tag: str, shard: PlannedShard) -> str:
    """``lmic-1a2b3c4d-trn1-32xlarge-1of2`` (a retry adds ``-r1``, ``-r2`` …)."""
    return f"{JOB_PREFIX}-{tag}-{shard.instance_type.replace('.', '-')}-{shard.shard.label()}"


def plan_jobs(request: RemoteRequest) -> JobPlan:
    """The jobs of a search across ``request.instances``; :class:`InputError` naming what is missing
    or what SageMaker cannot run."""
    if not request.instances:
        raise InputError(
            "--on sagemaker needs --instance TYPE (one or more: ml.trn1.32xlarge, ml.trn2.48xlarge …)"
        )
    if not request.s3_prefix:
        raise InputError(
            "--on sagemaker needs --s3-prefix s3://BUCKET/PREFIX: the jobs publish their results there"
        )
    split_s3(request.s3_prefix, "--s3-prefix")
    if not request.role:
        raise InputError(
            "--on sagemaker needs --role ARN: the execution role the jobs run as (it reads and writes the S3 prefix)"
        )
    region = request.region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    if not region:
        raise InputError("--on sagemaker needs a region: --region NAME (or AWS_REGION)")
    image = choose_job_image(region, request.image, request.optimum_neuron)
    grids = _grids(request, image)
    tag = search_tag(request.search, request.s3_prefix)
    plan = JobPlan(request, tag, region, image.uri, image.reason, secrets=job_secrets(request))
    sizes = {name: grid.tensor_parallel_sizes for name, (grid, _) in grids.items()}
    for shard in plan_shards(sizes, request.max_jobs):
        if request.search.strategy == "guided" and _nothing_to_try(shard, *grids[shard.instance_type]):
            plan.idle.append(shard)
            continue
        name = job_base_name(tag, shard)
        plan.jobs.append(
            PlannedJob(shard, name, create_request(plan, shard, name), _price(shard.instance_type))
        )
    return plan


def job_secrets(request: RemoteRequest) -> dict[str, str]:
    """The ``--secret-env`` values the jobs get; :class:`SpecError` naming a variable that is not
    set, or :class:`InputError` for a gated model with no Hugging Face token — before any job starts,
    since each job would pay for its instance and then fail its first download with 401."""
    from lmi_config.knowledge.models import is_gated
    from lmi_config.secrets import environment_secrets, hugging_face_token_names

    if request.stopping:
        return {}
    reserved = sorted(set(request.secret_env) & {PACKAGE_VARIABLE, JOB_NAME_VARIABLE, SECRET_NAMES_VARIABLE})
    if reserved:
        raise InputError(
            f"--secret-env {', '.join(reserved)}: set by lmi-config for every job; choose another"
        )
    values = environment_secrets(tuple(dict.fromkeys(request.secret_env)))
    model = request.search.model
    tokens = hugging_face_token_names()
    if is_gated(model) and not tokens & set(values):
        raise InputError(
            f"--model {model}: a gated Hugging Face repository, and no job would have a token to download it "
            "(it fails with 401 after its instance has started): export HF_TOKEN (a token of an account "
            "granted access) and pass --secret-env HF_TOKEN; nothing was started"
        )
    return values


def _grids(request: RemoteRequest, image: JobImage) -> dict[str, tuple[TrialGrid, Predictor]]:
    """Per instance type: the seed's grid for the model and the judge's predictor, which judges the
    export registry of the optimum-neuron the jobs' image ships (unknown: any release lmi-config
    knows). A model that registry does not export, or an instance whose NeuronCores the image's
    Neuron SDK predates, is refused before any job is planned."""
    from lmi_config.knowledge.instances import resolve_instance
    from lmi_config.modelarch import ModelResolutionError, resolve_model
    from lmi_config.search.grid import Predictor, seed_grid

    try:
        arch = resolve_model(request.search.model, allow_hub=request.search.hub)
    except ModelResolutionError as error:
        raise InputError(str(error)) from None
    offered = training_instance_types()
    grids = {}
    for name in request.instances:
        try:
            instance = resolve_instance(name)
        except ValueError as error:
            raise InputError(f"--instance {name}: {error}") from None
        if instance.accelerator != "neuron":
            raise InputError(
                f"--instance {name}: has no NeuronCores; search exports for Trainium (and Inferentia2 as trn1)"
            )
        check_runs_on(image, instance.instance_type, instance.platform)  # whatever botocore offers
        if f"ml.{instance.instance_type}" not in offered:
            neuron = ", ".join(item for item in offered if item.startswith(("ml.trn", "ml.inf")))
            raise InputError(
                f"--instance {name}: SageMaker training jobs do not offer ml.{instance.instance_type} (they offer "
                f"{neuron or 'no Neuron type'}, per the installed botocore); optimum-neuron compiles for inf2 as "
                "trn1, so search the trn1 target on an ml.trn1 instance"
            )
        grid = seed_grid(
            arch.num_attention_heads,
            arch.max_position_embeddings,
            instance.num_cores,
            instance.cores_per_device,
        )
        if not grid.size:
            raise InputError(
                f"--instance {name}: no candidate for {request.search.model} (no TP size divides its heads)"
            )
        options = request.search
        predict = Predictor(arch, instance, options.backend, options.dtype, image.optimum_neuron)
        predict.refuse_unexported("; nothing was started")
        grids[instance.instance_type] = (grid, predict)
    return grids


def _nothing_to_try(shard: PlannedShard, grid: TrialGrid, predict: Predictor) -> bool:
    """Whether the guided strategy rules out every candidate of the shard before any trial: its job
    would pay for an instance that exports nothing."""
    from lmi_config.knowledge.planning import search_constants
    from lmi_config.search.strategy import GuidedStrategy

    own = replace(grid, tensor_parallel_sizes=shard.tensor_parallel_sizes)
    guided = GuidedStrategy(own, predict, search_constants().memory_error_margin)
    return all(guided.skip_reason(trial) is not None for trial in own.seed_order())


def _price(instance_type: str) -> float | None:
    from lmi_config.knowledge.planning import on_demand_price

    price = on_demand_price(instance_type, "sagemaker")
    return price.usd_per_hour if price is not None else None


def shard_arguments(plan: JobPlan, shard: PlannedShard) -> list[str]:
    """The ``lmi-config`` arguments the job runs: this shard of the same search."""
    options = plan.request.search
    arguments = ["search", "--model", options.model, "--instance", shard.instance_type]
    arguments += [
        "--shard",
        f"{shard.shard.index}/{shard.shard.count}",
        "--results",
        str(plan.request.s3_prefix),
    ]
    arguments += ["--strategy", options.strategy, "--backend", options.backend, "--work-dir", WORK_DIRECTORY]
    arguments += ["--region", plan.region, *order_arguments(options)]
    for flag, value in (
        ("--task", options.task),
        ("--dtype", options.dtype),
        ("--export-timeout", options.export_timeout),
        ("--load-timeout", options.load_timeout),
    ):
        if value is not None:
            arguments += [flag, str(value)]
    return arguments + (["--hub"] if options.hub else [])


def package_uri(plan: JobPlan) -> str:
    """Where the coordinator uploads the lmi-config its jobs install (one object per package content)."""
    return f"{str(plan.request.s3_prefix).rstrip('/')}/code/{job_package().name}"


def create_request(plan: JobPlan, shard: PlannedShard, name: str) -> dict[str, Any]:
    """The CreateTrainingJob parameters of one shard's job (with the ``--secret-env`` values: print
    :meth:`JobPlan.shown_request` instead)."""
    request = plan.request
    return {
        "TrainingJobName": name,
        "RoleArn": request.role,
        "AlgorithmSpecification": {
            "TrainingImage": plan.image,
            "TrainingInputMode": "File",
            "ContainerEntrypoint": ["/bin/sh", "-c", ENTRY_SCRIPT, "lmi-config"],
            "ContainerArguments": shard_arguments(plan, shard),
        },
        "InputDataConfig": [
            {
                "ChannelName": CHANNEL,
                "DataSource": {
                    "S3DataSource": {
                        "S3DataType": "S3Prefix",
                        "S3Uri": package_uri(plan),
                        "S3DataDistributionType": "FullyReplicated",
                    }
                },
            }
        ],
        "OutputDataConfig": {"S3OutputPath": f"{str(request.s3_prefix).rstrip('/')}/job-output"},
        "ResourceConfig": {
            "InstanceType": f"ml.{shard.instance_type}",
            "InstanceCount": 1,
            "VolumeSizeInGB": VOLUME_GIB,
        },
        "StoppingCondition": {"MaxRuntimeInSeconds": int(request.max_hours * 3600)},
        # the credentials go here and nowhere else (see the module docstring: DescribeTrainingJob shows them)
        "Environment": {
            PACKAGE_VARIABLE: job_package().job_path,
            JOB_NAME_VARIABLE: name,
            **plan.secrets,
            # the job masks these values in the lines it journals (see runner.py), whatever their names
            **({SECRET_NAMES_VARIABLE: ",".join(plan.secrets)} if plan.secrets else {}),
        },
        "Tags": [
            {"Key": "lmi-config:search", "Value": plan.search_tag},
            {"Key": "lmi-config:shard", "Value": shard.name},
        ],
    }


def format_plan(plan: JobPlan) -> str:
    """The jobs, their instance-hours and the cost bound, as the user confirms them."""
    hours = plan.request.max_hours
    lines = [
        f"search {plan.request.search.model} as {len(plan.jobs)} SageMaker training job(s) in {plan.region}, "
        f"results in {plan.request.s3_prefix}",
        f"image {plan.image}",
        f"  {plan.image_reason}",
        f"{'job':<40} {'instance':<20} {'TP sizes':<14} {'hours':>6} {'at most':>10}",
    ]
    for job in plan.jobs:
        cost = f"${job.usd_per_hour * hours:,.2f}" if job.usd_per_hour is not None else "no price"
        sizes = ",".join(map(str, job.shard.tensor_parallel_sizes))
        lines.append(f"{job.name:<40} ml.{job.shard.instance_type:<17} {sizes:<14} {hours:>6g} {cost:>10}")
    for shard in plan.idle:
        sizes = ",".join(map(str, shard.tensor_parallel_sizes))
        lines.append(
            f"{shard.name}: no job — the judge rules out every candidate of TP {sizes} on {shard.instance_type}"
        )
    bound = f"at most ${plan.cost_bound_usd:,.2f}"
    if plan.unpriced:
        bound += f" plus the hours of {', '.join(plan.unpriced)} (no list price known)"
    lines.append(
        f"{plan.instance_hours:g} instance-hours at most (each job ends after --max-hours {hours:g}); {bound} "
        "at SageMaker on-demand list prices"
    )
    return "\n".join(lines) + "\n"
