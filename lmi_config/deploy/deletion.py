"""What ``deploy --delete NAME`` (and the retirement after ``--update``) removes, what it keeps, and why.

Everything is decided before anything is removed, so ``--dry-run`` shows exactly the same list.
Only what deploy made and what nothing else uses goes:

- ownership: a resource without the ``lmi-config:version`` tag was not created by lmi-config and is
  kept, named, with the reason;
- in use: an endpoint config that another endpoint runs on (or is rolling to), and a model that any
  other endpoint config names, are kept, naming who uses them — every endpoint and endpoint config
  in the region is looked at, because names say nothing about sharing;
- S3 (``--purge-s3``): only the objects under the model's own prefix (``…/MODEL-NAME/``, the one deploy
  made), matched by whole path components, so ``s3://b/models`` never reaches ``models2/`` or
  ``models-archive/``; kept when another model reads anywhere under or above it;
- leftovers: the models and endpoint configs an interrupted run made for NAME carry
  ``lmi-config:endpoint=NAME``, so they are found even when endpoint NAME does not exist.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lmi_config.deploy.attached import AttachedPlan, component_model, component_rows, plan_attached
from lmi_config.deploy.aws import Clients, aws_errors, describe_error, is_missing
from lmi_config.deploy.names import search_fragment
from lmi_config.deploy.tags import ENDPOINT_TAG, OWNER_TAG
from lmi_config.errors import DeployError, SpecError
from lmi_config.knowledge.sagemaker import sagemaker_limits

Resource = tuple[str, str]  # (kind, name)


@dataclass
class DeletionPlan:
    """The resources to remove (in creation order: they go newest first) and those kept, with why."""

    target: str
    region: str
    endpoint_found: bool = False
    remove: list[Resource] = field(default_factory=list)
    kept: list[tuple[str, str, str]] = field(default_factory=list)  # kind, name, why

    @property
    def target_kept(self) -> bool:
        """Whether the endpoint itself stays (lmi-config did not create it)."""
        return any(kind == "endpoint" and name == self.target for kind, name, _ in self.kept)

    def public(self) -> dict[str, Any]:
        """The plan as JSON (``--delete --dry-run --format json``)."""
        return {
            "target": self.target,
            "region": self.region,
            "endpoint_found": self.endpoint_found,
            "remove": [{"kind": kind, "name": name} for kind, name in reversed(self.remove)],
            "keep": [{"kind": kind, "name": name, "why": why} for kind, name, why in self.kept],
        }


@dataclass
class _Inventory:
    """Who uses what, across every endpoint and endpoint config in the region."""

    configs_by_endpoint: dict[str, set[str]]
    models_by_config: dict[str, set[str]]
    # inference component -> (its endpoint, its model): listed for endpoints that host components
    components: dict[str, tuple[str, str | None]] = field(default_factory=dict)

    def endpoints_using(self, config: str, leaving: set[str]) -> list[str]:
        return sorted(
            name for name, used in self.configs_by_endpoint.items() if config in used and name not in leaving
        )

    def configs_naming(self, model: str, leaving: set[str]) -> list[str]:
        return sorted(
            name for name, models in self.models_by_config.items() if model in models and name not in leaving
        )

    def components_naming(self, model: str, leaving: set[str]) -> list[str]:
        return sorted(
            name for name, (_, used) in self.components.items() if used == model and name not in leaving
        )


def _pages(clients: Clients, operation: str, key: str, **parameters: Any) -> list[dict[str, Any]]:
    paginator = clients("sagemaker").get_paginator(operation)
    return [row for page in paginator.paginate(**parameters) for row in page.get(key, [])]


def _describe(call: Callable[..., dict[str, Any]], **parameters: str) -> dict[str, Any] | None:
    """A describe call's answer, or None when the resource does not exist (any other error raises)."""
    try:
        return call(**parameters)
    except aws_errors() as error:
        if is_missing(error):
            return None
        raise


def _tags(clients: Clients, arn: str) -> dict[str, str]:
    rows = clients("sagemaker").list_tags(ResourceArn=arn).get("Tags", [])
    return {str(row.get("Key")): str(row.get("Value", "")) for row in rows}


def _config_names(endpoint: dict[str, Any]) -> set[str]:
    """The config an endpoint runs on, and the one it is rolling to."""
    pending = (endpoint.get("PendingDeploymentSummary") or {}).get("EndpointConfigName")
    return {name for name in (endpoint.get("EndpointConfigName"), pending) if name}


def _model_names(config: dict[str, Any]) -> set[str]:
    variants = [*config.get("ProductionVariants", []), *config.get("ShadowProductionVariants", [])]
    return {variant["ModelName"] for variant in variants if variant.get("ModelName")}


def hosts_components(config: dict[str, Any]) -> bool:
    """An endpoint config whose variants name no model hosts inference components."""
    variants = config.get("ProductionVariants", [])
    return bool(variants) and not any(variant.get("ModelName") for variant in variants)


def _inventory(clients: Clients) -> _Inventory:
    sagemaker = clients("sagemaker")
    by_endpoint: dict[str, set[str]] = {}
    for row in _pages(clients, "list_endpoints", "Endpoints"):
        described = _describe(sagemaker.describe_endpoint, EndpointName=row["EndpointName"])
        by_endpoint[row["EndpointName"]] = _config_names(described or {})
    by_config: dict[str, set[str]] = {}
    hosting: set[str] = set()
    for row in _pages(clients, "list_endpoint_configs", "EndpointConfigs"):
        name = row["EndpointConfigName"]
        described = _describe(sagemaker.describe_endpoint_config, EndpointConfigName=name) or {}
        by_config[name] = _model_names(described)
        if hosts_components(described):
            hosting.add(name)
    inventory = _Inventory(by_endpoint, by_config)
    # only an endpoint running a config without models has components: listing them elsewhere
    # would be a call for nothing (and one some test servers do not serve)
    for endpoint, configs in sorted(by_endpoint.items()):
        if configs & hosting:
            for component in component_rows(clients, endpoint):
                inventory.components[component["InferenceComponentName"]] = (
                    endpoint,
                    component_model(clients, component),
                )
    return inventory


def _made_for(clients: Clients, endpoint_name: str) -> tuple[list[str], list[str]]:
    """The models and endpoint configs tagged ``lmi-config:endpoint=NAME`` (an interrupted run's)."""
    # deploy names models and configs after the endpoint name cut to base_length() (43), then a stamp
    # (a component's model: cut to 39, then -cN); names made with the older, shorter stamp kept 47
    # characters: their first 39 still match
    fragment = search_fragment(endpoint_name)
    found: list[list[str]] = []
    for operation, key, name_key, arn_key in (
        ("list_models", "Models", "ModelName", "ModelArn"),
        ("list_endpoint_configs", "EndpointConfigs", "EndpointConfigName", "EndpointConfigArn"),
    ):
        rows = _pages(clients, operation, key, NameContains=fragment)
        # NameContains only narrows the listing; the tag decides
        found.append(
            [row[name_key] for row in rows if _tags(clients, row[arn_key]).get(ENDPOINT_TAG) == endpoint_name]
        )
    return found[0], found[1]


class _Decider:
    """Decides, resource by resource, what goes and what stays; fills a :class:`DeletionPlan`."""

    def __init__(self, clients: Clients, plan: DeletionPlan, inventory: _Inventory) -> None:
        self.clients = clients
        self.plan = plan
        self.inventory = inventory
        self.leaving_endpoints: set[str] = set()
        self.leaving_configs: set[str] = set()
        self.leaving_models: dict[str, dict[str, Any]] = {}  # name -> describe_model
        self.leaving_components: set[str] = set()

    def keep(self, kind: str, name: str, why: str) -> None:
        if not any(row[:2] == (kind, name) for row in self.plan.kept):
            self.plan.kept.append((kind, name, why))

    def endpoint(self, name: str, described: dict[str, Any]) -> None:
        if OWNER_TAG not in _tags(self.clients, described["EndpointArn"]):
            self.keep("endpoint", name, f"it has no {OWNER_TAG} tag: lmi-config did not create it")
            return
        self.leaving_endpoints.add(name)

    def config(self, name: str) -> None:
        described = _describe(self.clients("sagemaker").describe_endpoint_config, EndpointConfigName=name)
        if described is None or name in self.leaving_configs:
            return
        users = self.inventory.endpoints_using(name, self.leaving_endpoints)
        if users:
            self.keep("endpoint-config", name, f"endpoint {', '.join(users)} still uses it")
        elif OWNER_TAG not in _tags(self.clients, described["EndpointConfigArn"]):
            self.keep("endpoint-config", name, f"it has no {OWNER_TAG} tag: lmi-config did not create it")
        else:
            self.leaving_configs.add(name)

    def model(self, name: str) -> None:
        described = _describe(self.clients("sagemaker").describe_model, ModelName=name)
        if described is None or name in self.leaving_models:
            return
        namers = self.inventory.configs_naming(name, self.leaving_configs)
        components = self.inventory.components_naming(name, self.leaving_components)
        if components:
            self.keep("model", name, f"inference component {', '.join(components)} still runs it")
        elif namers:
            users = sorted(
                {
                    user
                    for config in namers
                    for user in self.inventory.endpoints_using(config, self.leaving_endpoints)
                }
            )
            used = f" (used by endpoint {', '.join(users)})" if users else ""
            self.keep("model", name, f"endpoint config {', '.join(namers)} still names it{used}")
        elif OWNER_TAG not in _tags(self.clients, described["ModelArn"]):
            self.keep("model", name, f"it has no {OWNER_TAG} tag: lmi-config did not create it")
        else:
            self.leaving_models[name] = described

    def decide(self, configs: list[str], models: list[str]) -> None:
        """Configs first (a kept config keeps its models), then every model they or the tags name."""
        for config in configs:
            self.config(config)
        named = [
            model for config in configs for model in sorted(self.inventory.models_by_config.get(config, ()))
        ]
        for model in dict.fromkeys([*named, *models]):
            self.model(model)


def check_name(name: str) -> None:
    """Refuse (exit 2, before any call) a name SageMaker cannot give an endpoint."""
    bounds = sagemaker_limits().names["endpoint_name"]
    too_long = bounds.maximum is not None and len(name) > bounds.maximum
    if not name or too_long or (bounds.pattern and not re.fullmatch(bounds.pattern, name)):
        shown = name if len(name) <= 80 else name[:79] + "…"
        raise SpecError(
            f"--delete {shown!r}: not an endpoint name (letters, digits and hyphens, at most "
            f"{bounds.maximum} characters)"
        )


def plan_deletion(clients: Clients, name: str, *, purge_s3: bool = False) -> DeletionPlan:
    """What ``--delete NAME`` removes and keeps; nothing is removed. Raises :class:`DeployError`
    when neither endpoint NAME nor anything made for it exists, or when AWS cannot say what uses what."""
    from lmi_config.deploy.s3_purge import plan_purge

    plan = DeletionPlan(name, clients.region)
    try:
        endpoint = _describe(clients("sagemaker").describe_endpoint, EndpointName=name)
        orphan_models, orphan_configs = _made_for(clients, name)
        if endpoint is None and not orphan_models and not orphan_configs:
            raise DeployError(
                f"no endpoint {name} in {clients.region}, and no model or endpoint config tagged "
                f"{ENDPOINT_TAG}={name}"
            )
        decider = _Decider(clients, plan, _inventory(clients))
        attached = AttachedPlan()
        if endpoint is not None:
            plan.endpoint_found = True
            decider.endpoint(name, endpoint)
            if name in decider.leaving_endpoints:
                attached = plan_attached(clients, name, endpoint, decider.inventory.components, decider.keep)
                decider.leaving_components.update(component for _, component in attached.components)
                if attached.blocking:  # a component lmi-config did not make keeps the endpoint up
                    decider.leaving_endpoints.discard(name)
                    decider.keep("endpoint", name, attached.blocking)
        configs = sorted(_config_names(endpoint or {})) + orphan_configs
        component_models = [model for model in attached.models if model]
        decider.decide(list(dict.fromkeys(configs)), [*orphan_models, *component_models])
        objects = plan_purge(clients, decider.leaving_models, decider.keep) if purge_s3 else []
    except aws_errors() as error:
        raise DeployError(
            f"cannot tell what uses these resources ({describe_error(error)}); nothing was removed"
        ) from None
    leaving = name in decider.leaving_endpoints and endpoint is not None
    plan.remove = [
        *objects,
        *(("model", model) for model in decider.leaving_models),
        *(("endpoint-config", config) for config in sorted(decider.leaving_configs)),
        *([("endpoint", name)] if leaving else []),
        *attached.components,
        *(attached.scaling if leaving else []),
        *(attached.alarms if leaving else []),
    ]
    return plan


def plan_retirement(clients: Clients, endpoint_name: str, previous_config: str) -> DeletionPlan:
    """After ``--update``: the previous endpoint config and its models, when deploy made them and
    nothing uses them any more (the endpoint now runs on the new config)."""
    plan = DeletionPlan(endpoint_name, clients.region, endpoint_found=True)
    try:
        decider = _Decider(clients, plan, _inventory(clients))
        decider.decide([previous_config], [])
    except aws_errors() as error:
        plan.kept.append(
            ("endpoint-config", previous_config, f"cannot tell what uses it ({describe_error(error)})")
        )
        return plan
    plan.remove = [
        *(("model", model) for model in decider.leaving_models),
        *(("endpoint-config", config) for config in sorted(decider.leaving_configs)),
    ]
    return plan
