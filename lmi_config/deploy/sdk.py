"""The two places the SageMaker SDK earns its weight (``pip install 'lmi-config[sagemaker]'``):
finding the execution role inside a SageMaker notebook or Studio, and refreshing the image table
from the SDK's own image data into a local override file. Nothing else imports it."""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any

from lmi_config.errors import DeployError, OutputError
from lmi_config.knowledge.images import frameworks, override_path, registries, sdk_registries, sdk_section
from lmi_config.strict_json import dump_json

EXTRA = "pip install 'lmi-config[sagemaker]'"


def _first_of(*candidates: tuple[str, str]) -> Any:
    """The first importable ``module.attribute`` (v3's sagemaker-core, then v2's sagemaker), else None."""
    for module, attribute in candidates:
        try:
            return getattr(importlib.import_module(module), attribute)
        except Exception:  # an SDK may fail at import time (no region, a missing optional package)
            continue
    return None


def discover_role(region: str) -> str:
    """The notebook's or Studio's execution role, through the SDK (v3 sagemaker-core or v2)."""
    os.environ.setdefault("AWS_DEFAULT_REGION", region)  # the SDK builds clients at import time
    get_execution_role = _first_of(
        ("sagemaker.core.helper.session_helper", "get_execution_role"), ("sagemaker", "get_execution_role")
    )
    if get_execution_role is None:
        raise DeployError(
            f"no --role given, and finding the notebook's execution role needs the SageMaker SDK ({EXTRA}); "
            "give --role arn:aws:iam::ACCOUNT:role/NAME"
        )
    try:
        return str(get_execution_role())
    except Exception as error:  # the SDK raises ValueError, ClientError … outside a notebook
        raise DeployError(f"no --role given and the SDK found none ({error}); give --role") from None


def _sdk_documents() -> tuple[dict[str, dict[str, Any]], str]:
    """The SDK's image documents for the frameworks the table knows, and the SDK's version."""
    config_for_framework = _first_of(
        ("sagemaker.core.image_uris", "config_for_framework"),
        ("sagemaker.image_uris", "config_for_framework"),
    )
    if config_for_framework is None:
        raise DeployError(f"images --refresh reads the SageMaker SDK's image data: {EXTRA}")
    from importlib.metadata import PackageNotFoundError, version

    package = "sagemaker"
    for candidate in ("sagemaker-core", "sagemaker"):
        try:
            package = f"{candidate} {version(candidate)}"
            break
        except PackageNotFoundError:
            continue
    documents = {}
    for framework in frameworks():
        try:
            documents[framework] = dict(config_for_framework(framework))
        except (FileNotFoundError, ValueError):
            continue  # an SDK without this family
    if not documents:
        raise DeployError("the installed SageMaker SDK has no djl-* image tables")
    return documents, package


def _domain(region: str) -> str:
    """A region the package's table does not know: the commercial or the China partition's suffix."""
    return "amazonaws.com.cn" if region.startswith("cn-") else "amazonaws.com"


def refresh_images(output: str | None = None) -> tuple[Path, dict[str, Any]]:
    """Write the SDK's tags and regions to the local override (never the package); returns (path, summary)."""
    from lmi_config.io import write_output

    documents, package = _sdk_documents()
    section = sdk_section(documents, package)
    known = registries()
    rows = [
        {
            "region": region,
            "account": account,
            "domain": known[region].domain if region in known else _domain(region),
        }
        for region, account in sdk_registries(documents).items()
    ]
    document = {"generated_by": "lmi-config images --refresh", "sagemaker_sdk": section, "registries": rows}
    path = Path(output) if output else override_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise OutputError(f"cannot create {path.parent}: {error.strerror or error}") from None
    write_output(str(path), dump_json(document, indent=1))
    versions = {name: len(table["versions"]) for name, table in section["frameworks"].items()}
    return path, {"package": package, "versions": versions, "regions": len(rows)}
