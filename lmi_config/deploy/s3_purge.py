"""``--delete --purge-s3``: the objects under a removed model's own S3 prefix, and nothing else.

S3 keys are strings, and a listing's ``Prefix`` is a string prefix: ``s3://b/models`` lists
``models2/`` and ``models-archive/`` too. Here a prefix is a folder: it is matched by whole path
components (``models/``), and only the prefix deploy made for the model (``…/MODEL-NAME/``) is
purged. SageMaker itself reads an ``S3Prefix`` model source as a string prefix, so another model
whose source is ``s3://b/lmi/m`` reads ``lmi/m1/`` as well: any overlap with a model that stays
keeps the objects.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lmi_config.deploy.aws import Clients, aws_errors, is_missing

Keep = Callable[[str, str, str], None]


def split_uri(uri: str) -> tuple[str, str] | None:
    """``s3://bucket/key`` → (bucket, key); None for anything else."""
    if not uri.startswith("s3://"):
        return None
    bucket, _, key = uri[len("s3://") :].partition("/")
    return (bucket, key) if bucket else None


def as_folder(key: str) -> str:
    """``lmi/model`` and ``lmi/model/`` → ``lmi/model/`` (whole path components); ``""`` stays ``""``."""
    stripped = key.strip("/")
    return f"{stripped}/" if stripped else ""


def _uris(described: dict[str, Any]) -> list[str]:
    """Every S3 location a model's containers read (model data, uncompressed sources, extras)."""
    containers = [described.get("PrimaryContainer") or {}, *(described.get("Containers") or [])]
    found = []
    for container in containers:
        found.append(container.get("ModelDataUrl"))
        found.append(((container.get("ModelDataSource") or {}).get("S3DataSource") or {}).get("S3Uri"))
        for extra in container.get("AdditionalModelDataSources") or []:
            found.append((extra.get("S3DataSource") or {}).get("S3Uri"))
    return [uri for uri in found if isinstance(uri, str) and uri]


def _own_prefix(name: str, described: dict[str, Any]) -> tuple[str, str, str | None] | None:
    """(bucket, folder, why not) for the model's uncompressed source; None when it has none."""
    container = described.get("PrimaryContainer") or {}
    source = (container.get("ModelDataSource") or {}).get("S3DataSource") or {}
    uri = source.get("S3Uri")
    if source.get("S3DataType") != "S3Prefix" or not uri:
        return None
    parts = split_uri(str(uri))
    if parts is None:
        return None
    bucket, key = parts
    folder = as_folder(key)
    if not folder:
        return bucket, folder, "it is the whole bucket, not a prefix deploy made"
    if folder.rstrip("/").rsplit("/", 1)[-1] != name:
        return bucket, folder, f"it is not the prefix deploy makes for model {name} (…/{name}/)"
    return bucket, folder, None


def _readers(clients: Clients, bucket: str, folder: str, leaving: dict[str, Any]) -> list[str]:
    """The models that stay and read anything under ``folder`` or above it (SageMaker's string prefix)."""
    sagemaker = clients("sagemaker")
    paginator = sagemaker.get_paginator("list_models")
    readers = []
    for page in paginator.paginate():
        for row in page.get("Models", []):
            if row["ModelName"] in leaving:
                continue
            try:
                described = sagemaker.describe_model(ModelName=row["ModelName"])
            except aws_errors() as error:
                if is_missing(error):
                    continue
                raise
            for uri in _uris(described):
                parts = split_uri(uri)
                if (
                    parts
                    and parts[0] == bucket
                    and (parts[1].startswith(folder) or folder.startswith(parts[1]))
                ):
                    readers.append(row["ModelName"])
                    break
    return readers


def plan_purge(clients: Clients, leaving: dict[str, dict[str, Any]], keep: Keep) -> list[tuple[str, str]]:
    """The objects to remove under the leaving models' own prefixes; what is kept goes to ``keep``."""
    objects: list[tuple[str, str]] = []
    for name, described in leaving.items():
        own = _own_prefix(name, described)
        if own is None:
            continue
        bucket, folder, refusal = own
        location = f"s3://{bucket}/{folder}"
        if refusal:
            keep("s3-prefix", location, refusal)
            continue
        readers = _readers(clients, bucket, folder, leaving)
        if readers:
            keep("s3-prefix", location, f"model {', '.join(readers)} also reads it")
            continue
        for page in clients("s3").get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=folder):
            objects.extend(("s3-object", f"{bucket}/{item['Key']}") for item in page.get("Contents", []))
    return objects
