"""Inference components: one endpoint hosting several models (or LoRA adapters), each with its own
accelerators, memory and copies, judged before any call.

Each component's configuration is rendered and judged exactly as a whole endpoint's is (render,
with the full lint: the judge and its memory model), on the endpoint's instance, with the tensor
parallelism of the accelerators it is given: SageMaker hands a copy
``NumberOfAcceleratorDevicesRequired`` devices — GPUs, or Neuron devices whose NeuronCores the
container's ``tensor_parallel_degree`` counts (``sagemaker_api.json`` ``facts``) — so a component
whose TP differs from what it is given is refused, and a TP left to ``auto`` (or unset) becomes
what it is given. Then the sums: every copy's accelerators and host memory must fit one instance,
and all copies the endpoint's instances. ``MinMemoryRequiredInMb`` defaults to the weights of one
copy as the memory model counts them (the container reads them through host memory).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lmi_config.deploy.image_choice import ImageChoice
from lmi_config.deploy.names import component_model_name
from lmi_config.deploy.production import Production, judge_weights
from lmi_config.deploy.request_limits import field_problems
from lmi_config.deploy.sizing import EndpointSizing, size_endpoint
from lmi_config.knowledge.sagemaker_requests import sagemaker_fact
from lmi_config.spec import Spec
from lmi_config.spec_deploy import SpecComponent

MIB = 1024**2
_IC = "sagemaker.CreateInferenceComponent"
_TP_KEYS = ("tensor_parallel_degree", "option.tensor_parallel_degree")


@dataclass
class ComponentPlan:
    """One inference component as it will be created."""

    name: str  # as the spec names it
    component_name: str  # InferenceComponentName (ENDPOINT-NAME)
    copies: int
    model_name: str | None = None  # None for an adapter
    accelerators: int | None = None
    memory_mb: int | None = None
    cpu_cores: float | None = None
    tensor_parallel_degree: int | None = None
    environment: dict[str, str] = field(default_factory=dict)
    image: ImageChoice | None = None
    sizing: EndpointSizing | None = None
    rendered: Any = None  # lmi_config.render.Rendered
    weights_uri: str | None = None
    adapter: str | None = None
    base: str | None = None  # the base component's InferenceComponentName
    reasons: list[str] = field(default_factory=list)

    def public(self, plan: Any) -> dict[str, Any]:
        return {
            "name": self.name,
            "inference_component_name": self.component_name,
            "model_name": self.model_name,
            "copies": self.copies,
            "accelerators": self.accelerators,
            "memory_mb": self.memory_mb,
            "cpu_cores": self.cpu_cores,
            "tensor_parallel_degree": self.tensor_parallel_degree,
            "image": self.image.uri if self.image else None,
            "environment": plan.masked(dict(self.environment)),
            "adapter": self.adapter,
            "base": self.base,
            "reasons": list(self.reasons),
        }


@dataclass(frozen=True)
class ComponentContext:
    """What planning a component needs from the endpoint's plan."""

    spec: Spec
    endpoint_name: str
    instance: Any  # knowledge.instances.Instance
    instance_count: int
    now: float
    secrets: dict[str, str]
    production: Production
    render: Callable[[Spec], Any]  # a spec -> Rendered (as the container Environment)
    image_for: Callable[[Spec, Any], ImageChoice]
    sizing_overrides: Any


def _explicit_tp(options: dict[str, Any]) -> int | None | str:
    """The component's written TP: an int, ``auto`` / None (to be given), or the text as written."""
    value = next((options[key] for key in _TP_KEYS if key in options), None)
    if value is None or str(value).strip().lower() == "auto":
        return None
    text = str(value).strip()
    return int(text) if text.isascii() and text.isdigit() and len(text) < 6 else text


def _component_spec(spec: Spec, component: SpecComponent, tensor_parallel_degree: int | None) -> Spec:
    options = {**spec.options, **component.options}
    if tensor_parallel_degree is not None:
        for key in _TP_KEYS:
            options.pop(key, None)
        options["tensor_parallel_degree"] = tensor_parallel_degree
    return spec.model_copy(
        update={
            "model": component.model or spec.model,
            "model_architecture": component.model_architecture
            or (spec.model_architecture if not component.model else None),
            "options": options,
            "env": {**spec.env, **component.env},
            "deploy": None,
        }
    )


def _rendered_tp(rendered: Any) -> int | None:
    value = dict(rendered.items).get("option.tensor_parallel_degree", "").strip()
    return int(value) if value.isascii() and value.isdigit() and len(value) < 6 else None


def _cores(accelerators: int, instance: Any) -> int:
    return accelerators * instance.cores_per_device


def _words(instance: Any, accelerators: int) -> str:
    if instance.accelerator == "neuron":
        return f"{accelerators} Neuron devices ({_cores(accelerators, instance)} NeuronCores)"
    return f"{accelerators} GPU{'s' if accelerators != 1 else ''}"


def _model_component(
    context: ComponentContext, index: int, component: SpecComponent, where: str, problems: list[str]
) -> ComponentPlan:
    instance = context.instance
    key = f"deploy.components.{index - 1}"
    tp_key = next((f"{key}.options.{name}" for name in _TP_KEYS if name in component.options), key)
    written = _explicit_tp({**context.spec.options, **component.options})  # the spec's TP is inherited
    if isinstance(written, str):
        problems.append(f"{where}: tensor_parallel_degree {written!r} is not a count")
        written = None
    given = _cores(component.accelerators, instance) if component.accelerators else None
    if written is not None and given is not None and written != given:
        fix = (
            f"accelerators: {written // instance.cores_per_device}"
            if written % instance.cores_per_device == 0
            else f"tensor_parallel_degree: {given}"
        )
        problems.append(
            f"{context.spec.origin(tp_key)}: tensor_parallel_degree {written} but component {component.name} is given "
            f"{_words(instance, component.accelerators or 0)}: the container shards the model over "
            f"{written} {instance.core_word}s and SageMaker hands each copy {given}; set {fix}"
        )
    chosen = written if written is not None else given
    component_spec = _component_spec(context.spec, component, chosen)
    rendered = context.render(component_spec)
    tensor_parallel_degree = _rendered_tp(rendered) or chosen
    plan = ComponentPlan(
        name=component.name,
        component_name=f"{context.endpoint_name}-{component.name}",
        copies=component.copies,
        model_name=component_model_name(context.endpoint_name, index, context.now),
        cpu_cores=component.cpu_cores,
        tensor_parallel_degree=tensor_parallel_degree,
        rendered=rendered,
    )
    accelerators = component.accelerators
    if accelerators is None and tensor_parallel_degree is not None:
        if tensor_parallel_degree % instance.cores_per_device:
            problems.append(
                f"{where}: tensor_parallel_degree {tensor_parallel_degree} is not a whole number of Neuron "
                f"devices ({instance.cores_per_device} NeuronCores each), and SageMaker hands out whole devices"
            )
        accelerators = max(1, tensor_parallel_degree // instance.cores_per_device)
        plan.reasons.append(
            f"{_words(instance, accelerators)}: tensor_parallel_degree {tensor_parallel_degree}"
        )
    elif accelerators is None:
        problems.append(
            f"{where}: give accelerators (or tensor_parallel_degree): the container's TP is not known"
        )
    else:
        plan.reasons.append(
            f"{_words(instance, accelerators)}: accelerators (tensor_parallel_degree {chosen})"
        )
    plan.accelerators = accelerators
    memory = rendered.assessment.memory if rendered.assessment is not None else None
    if component.memory_mb is not None:
        plan.memory_mb = component.memory_mb
        plan.reasons.append(f"{component.memory_mb} MB host memory: memory_mb")
    elif memory is not None:
        plan.memory_mb = max(128, math.ceil(memory.weight_bytes_total / MIB))
        plan.reasons.append(
            f"{plan.memory_mb} MB host memory: the weights of one copy ({memory.weight_bytes_total / 1024**3:.1f} GiB, "
            "the memory model's)"
        )
    else:
        problems.append(
            f"{where}: give memory_mb: the weights' size is unknown, so the host memory is not known"
        )
    environment = dict(json.loads(rendered.text)) if not rendered.problems else {}
    clashing = sorted(set(context.secrets) & set(environment))
    if clashing:
        problems.append(
            f"{where}: --secret-env {', '.join(clashing)}: already set by the component's configuration"
        )
    environment.update(context.secrets)
    weights = judge_weights(
        component_spec,
        dict(rendered.items).get("option.model_id", component_spec.model),
        environment,
        label=f"component {component.name}",
        delivery="environment",
        result=context.production,
    )
    environment.update(weights.environment)
    plan.environment = environment
    plan.weights_uri = weights.uri
    plan.image = context.image_for(component_spec, rendered)
    plan.sizing = size_endpoint(
        assessment=rendered.assessment,
        items=dict(rendered.items),
        backend=rendered.target["backend"],
        instance=instance,
        model_data_in_s3=weights.uri is not None,
        overrides=context.sizing_overrides,
    )
    problems.extend(f"component {component.name}: {problem}" for problem in plan.sizing.problems)
    requirements = {
        "NumberOfAcceleratorDevicesRequired": accelerators,
        "MinMemoryRequiredInMb": plan.memory_mb,
        "NumberOfCpuCoresRequired": component.cpu_cores,
    }
    for member, key in (
        ("NumberOfAcceleratorDevicesRequired", "accelerators"),
        ("MinMemoryRequiredInMb", "memory_mb"),
        ("NumberOfCpuCoresRequired", "cpu_cores"),
    ):
        problems.extend(
            field_problems(
                _IC,
                f"Specification.ComputeResourceRequirements.{member}",
                requirements[member],
                f"{where}.{key}",
            )
        )
    problems.extend(field_problems(_IC, "RuntimeConfig.CopyCount", component.copies, f"{where}.copies"))
    return plan


def _adapter_component(
    context: ComponentContext,
    component: SpecComponent,
    where: str,
    names: dict[str, SpecComponent],
    problems: list[str],
) -> ComponentPlan:
    base = names.get(component.base or "")
    if base is None or base.adapter is not None:
        problems.append(
            f"{where}: adapter {component.adapter} needs base: the name of a component with a model of its own "
            f"(one of {', '.join(name for name, item in names.items() if item.adapter is None) or 'none'})"
        )
    for key in ("accelerators", "memory_mb", "cpu_cores", "model"):
        if getattr(component, key) is not None:
            problems.append(
                f"{where}.{key}: an adapter runs on its base's accelerators and memory; remove {key}"
            )
    if not str(component.adapter).startswith("s3://"):
        problems.append(f"{where}.adapter: write s3://BUCKET/PREFIX (the adapter's weights)")
    problems.extend(
        field_problems(_IC, "Specification.Container.ArtifactUrl", component.adapter, f"{where}.adapter")
    )
    return ComponentPlan(
        name=component.name,
        component_name=f"{context.endpoint_name}-{component.name}",
        copies=component.copies,
        adapter=component.adapter,
        base=f"{context.endpoint_name}-{component.base}",
        reasons=[f"LoRA adapter on component {component.base}"],
    )


def _fit_problems(context: ComponentContext, plans: list[ComponentPlan]) -> list[str]:
    """Each copy fits one instance; all copies fit the endpoint's instances (accelerators, memory)."""
    instance = context.instance
    count = context.instance_count
    problems = []
    host_mb = int(instance.host_memory_gib * 1024) if instance.host_memory_gib else None
    models = [plan for plan in plans if plan.adapter is None and plan.accelerators is not None]
    for plan in models:
        if plan.accelerators and plan.accelerators > instance.num_devices:
            problems.append(
                f"component {plan.name}: a copy needs {_words(instance, plan.accelerators)} and ml.{instance.instance_type} "
                f"has {_words(instance, instance.num_devices)}"
            )
        if host_mb is not None and plan.memory_mb and plan.memory_mb > host_mb:
            problems.append(
                f"component {plan.name}: a copy needs {plan.memory_mb} MB of host memory and ml.{instance.instance_type} "
                f"has {host_mb} MB"
            )
    used = sum((plan.accelerators or 0) * plan.copies for plan in models)
    if used > instance.num_devices * count:
        shares = ", ".join(f"{plan.name} {plan.copies} x {plan.accelerators}" for plan in models)
        problems.append(
            f"the components need {used} accelerators ({shares}) and {count} x ml.{instance.instance_type} has "
            f"{instance.num_devices * count}: fewer copies, fewer accelerators per copy, or more instances (--instance-count)"
        )
    memory = sum((plan.memory_mb or 0) * plan.copies for plan in models)
    if host_mb is not None and memory > host_mb * count:
        problems.append(
            f"the components need {memory} MB of host memory and {count} x ml.{instance.instance_type} has "
            f"{host_mb * count} MB"
        )
    return problems


def plan_components(context: ComponentContext) -> tuple[list[ComponentPlan], list[str]]:
    """Every component judged (its configuration, its share and the sums); (plans, refusals)."""
    components = (context.spec.deploy.components if context.spec.deploy else None) or []
    problems: list[str] = []
    names: dict[str, SpecComponent] = {}
    for index, component in enumerate(components):
        where = context.spec.origin(f"deploy.components.{index}")
        if component.name in names:
            problems.append(
                f"{where}: component {component.name} is named twice; give each a name of its own"
            )
        names[component.name] = component
        problems.extend(
            field_problems(
                _IC, "InferenceComponentName", f"{context.endpoint_name}-{component.name}", f"{where}.name"
            )
        )
    plans = []
    for index, component in enumerate(components, 1):
        where = context.spec.origin(f"deploy.components.{index - 1}")
        if component.adapter is not None:
            plans.append(_adapter_component(context, component, where, names, problems))
        else:
            plans.append(_model_component(context, index, component, where, problems))
    if not any(plan.rendered is not None and plan.rendered.errors for plan in plans):
        # a configuration the judge refuses is the reason to give: its sizes are not the ones to add up
        problems.extend(_fit_problems(context, plans))
    unit = sagemaker_fact("inference_component_accelerators")
    if context.instance.accelerator == "neuron":
        context.production.notes.append(
            f"components: accelerators are Neuron devices of {context.instance.cores_per_device} NeuronCores "
            f"({unit.source})"
        )
    # adapters after the components they run on
    plans.sort(key=lambda plan: plan.adapter is not None)
    return plans, problems


def component_calls(
    plans: list[ComponentPlan], endpoint_name: str, variant: str, tags: list[dict[str, str]]
) -> list[Any]:
    """create_inference_component for each component, each waited for until InService."""
    from lmi_config.deploy.plan import ApiCall

    calls = []
    for plan in plans:
        specification: dict[str, Any]
        if plan.adapter is not None:
            specification = {
                "BaseInferenceComponentName": plan.base,
                "Container": {"ArtifactUrl": plan.adapter},
            }
        else:
            assert plan.sizing is not None
            requirements: dict[str, Any] = {
                "NumberOfAcceleratorDevicesRequired": plan.accelerators,
                "MinMemoryRequiredInMb": plan.memory_mb,
            }
            if plan.cpu_cores is not None:
                requirements["NumberOfCpuCoresRequired"] = plan.cpu_cores
            startup: dict[str, Any] = {
                "ContainerStartupHealthCheckTimeoutInSeconds": plan.sizing.health_check_timeout_seconds
            }
            if plan.sizing.download_timeout_seconds is not None:
                startup["ModelDataDownloadTimeoutInSeconds"] = plan.sizing.download_timeout_seconds
            specification = {
                "ModelName": plan.model_name,
                "ComputeResourceRequirements": requirements,
                "StartupParameters": startup,
            }
        parameters: dict[str, Any] = {
            "InferenceComponentName": plan.component_name,
            "EndpointName": endpoint_name,
            "VariantName": variant,
            "Specification": specification,
            "Tags": tags,
        }
        if plan.adapter is None:
            parameters["RuntimeConfig"] = {"CopyCount": plan.copies}
        calls.append(
            ApiCall(
                "sagemaker",
                "create_inference_component",
                parameters,
                f"component {plan.name}: "
                + (
                    f"adapter on {plan.base}"
                    if plan.adapter
                    else f"{plan.copies} x {plan.accelerators} accelerators"
                ),
                ("inference-component", plan.component_name),
                waits_for="inference-component",
            )
        )
    return calls
