"""Where the shards of a search put their results: an S3 prefix (``s3://bucket/prefix``) or a
local directory (a disk shared by several machines, or one machine's tests), with the same
interface and the same guarantees.

Concurrency is settled by the store itself, with no lock service of ours: every shard writes only
its own objects, and an object that two writers could both write (the search's definition, a
shard's object when a shard is started twice by mistake, the coordinator's lease) is written
conditionally — created only when absent (S3 ``If-None-Match: *``) or replaced only when it is
still the version read (S3 ``If-Match: <ETag>``). S3 has honoured both on PutObject since 2024;
boto3 releases before 1.35 (the project accepts 1.34) have no parameter for them, so the header
is added to the request itself, which every release sends as given. A directory does the same
under the object's own ``flock`` with a digest of its content as the version.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lmi_config.errors import InputError, OutputError
from lmi_config.io import exclusive_lock, lock_path, read_bounded, write_atomically

OBJECT_LIMIT_BYTES = 64 * 1024 * 1024  # a shard's results and journal (the journal's own cap)


class ConflictError(Exception):
    """A conditional write found the object created or changed by another writer."""


class DirectoryStore:
    """A results location on a file system: ``key`` is a path under the directory."""

    def __init__(self, directory: str) -> None:
        self.directory = Path(directory)
        self.location = directory

    def describe(self, key: str) -> str:
        """The object as a user names it."""
        return str(self.directory / key)

    def read(self, key: str) -> tuple[bytes, str] | None:
        """(content, version) or None when absent."""
        path = self.directory / key
        if not path.exists():
            return None
        data = read_bounded(path, limit_bytes=OBJECT_LIMIT_BYTES)
        return data, hashlib.sha256(data).hexdigest()

    def write(self, key: str, data: bytes, *, if_match: str | None = None, if_absent: bool = False) -> str:
        """Write ``data``; with ``if_absent`` only when there is no object, with ``if_match`` only when
        the object is still that version (:class:`ConflictError` otherwise). Returns the new version."""
        path = self.directory / key
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise OutputError(f"cannot write {path}: {error.strerror or error}") from None
        with exclusive_lock(lock_path(path), shown=str(path)):
            current = self.read(key)
            if if_absent and current is not None:
                raise ConflictError(self.describe(key))
            if if_match is not None and (current is None or current[1] != if_match):
                raise ConflictError(self.describe(key))
            write_atomically(path, data.decode("utf-8"), shown=str(path))
        return hashlib.sha256(data).hexdigest()

    def keys(self, prefix: str) -> list[str]:
        """The keys under ``prefix`` (a folder), sorted; lock files are not objects."""
        base = self.directory / prefix
        if not base.is_dir():
            return []
        return sorted(
            str(path.relative_to(self.directory))
            for path in base.rglob("*")
            if path.is_file() and not path.name.endswith(".lock") and not path.name.startswith(".")
        )

    def delete(self, key: str) -> None:
        """Remove an object (a missing one is fine)."""
        (self.directory / key).unlink(missing_ok=True)


class S3Store:
    """A results location under ``s3://bucket/prefix``."""

    def __init__(
        self, bucket: str, prefix: str, client: Any, errors: tuple[type[BaseException], ...]
    ) -> None:
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.location = f"s3://{bucket}/{self.prefix}" if self.prefix else f"s3://{bucket}"
        self.client = client
        self.errors = errors

    def _key(self, key: str) -> str:
        return f"{self.prefix}/{key}" if self.prefix else key

    def describe(self, key: str) -> str:
        """The object as a user names it."""
        return f"s3://{self.bucket}/{self._key(key)}"

    def read(self, key: str) -> tuple[bytes, str] | None:
        """(content, ETag) or None when absent; bounded, as every input is."""
        try:
            response = self.client.get_object(Bucket=self.bucket, Key=self._key(key))
        except self.errors as error:
            if _code(error) in ("NoSuchKey", "404", "NotFound"):
                return None
            raise OutputError(f"cannot read {self.describe(key)}: {_describe(error)}") from None
        if int(response.get("ContentLength") or 0) > OBJECT_LIMIT_BYTES:
            raise InputError(
                f"{self.describe(key)}: {response['ContentLength']} bytes; a shard object is at most "
                f"{OBJECT_LIMIT_BYTES} bytes (is it one?)"
            )
        data = response["Body"].read(OBJECT_LIMIT_BYTES + 1)
        return data, str(response.get("ETag", ""))

    def write(self, key: str, data: bytes, *, if_match: str | None = None, if_absent: bool = False) -> str:
        """PutObject, conditionally (see the module); returns the new ETag."""
        headers = {"If-None-Match": "*"} if if_absent else {"If-Match": if_match} if if_match else {}
        try:
            with ExtraHeaders(self.client, "PutObject", headers):
                response = self.client.put_object(
                    Bucket=self.bucket, Key=self._key(key), Body=data, ContentType="application/json"
                )
        except self.errors as error:
            if _code(error) in ("PreconditionFailed", "412", "ConditionalRequestConflict"):
                raise ConflictError(self.describe(key)) from None
            if if_match and _code(error) in ("NoSuchKey", "404"):
                raise ConflictError(self.describe(key)) from None
            raise OutputError(f"cannot write {self.describe(key)}: {_describe(error)}") from None
        return str(response.get("ETag", ""))

    def keys(self, prefix: str) -> list[str]:
        """The keys under ``prefix``, relative to the store's prefix, sorted."""
        found: list[str] = []
        start = self._key(prefix.rstrip("/") + "/")
        try:
            for page in self.client.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=start
            ):
                found.extend(row["Key"] for row in page.get("Contents", []))
        except self.errors as error:
            raise OutputError(f"cannot list {self.describe(prefix)}: {_describe(error)}") from None
        cut = len(self.prefix) + 1 if self.prefix else 0
        return sorted(key[cut:] for key in found)

    def delete(self, key: str) -> None:
        """DeleteObject (S3 answers a missing object with success)."""
        try:
            self.client.delete_object(Bucket=self.bucket, Key=self._key(key))
        except self.errors as error:
            raise OutputError(f"cannot delete {self.describe(key)}: {_describe(error)}") from None


class ExtraHeaders:
    """Add HTTP headers to one operation of a client while the block runs."""

    def __init__(self, client: Any, operation: str, headers: dict[str, str]) -> None:
        self.client, self.event, self.headers = client, f"before-sign.s3.{operation}", headers
        self.handler: Callable[..., None] = self._add

    def _add(self, request: Any, **_: Any) -> None:
        for name, value in self.headers.items():
            request.headers[name] = value

    def __enter__(self) -> None:
        if self.headers:
            self.client.meta.events.register(self.event, self.handler, unique_id="lmi-config-conditional")

    def __exit__(self, *exc: object) -> None:
        if self.headers:
            self.client.meta.events.unregister(self.event, unique_id="lmi-config-conditional")


def _code(error: BaseException) -> str:
    from lmi_config.deploy.aws import error_code

    return error_code(error)


def _describe(error: BaseException) -> str:
    from lmi_config.deploy.aws import describe_error

    return describe_error(error)


def open_store(location: str, *, region: str | None = None, endpoint_url: str | None = None) -> Any:
    """The store of ``--results``: ``s3://bucket[/prefix]`` or a directory (created when missing,
    its parent must exist). :class:`InputError` for anything else."""
    if location.startswith("s3://"):
        bucket, _, prefix = location[len("s3://") :].partition("/")
        if not bucket:
            raise InputError(f"--results {location}: no bucket; give s3://BUCKET/PREFIX")
        from lmi_config.deploy.aws import Clients, aws_errors

        clients = Clients(
            region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1",
            endpoint_url,
        )
        return S3Store(bucket, prefix, clients("s3"), aws_errors())
    if "://" in location:
        raise InputError(f"--results {location}: give s3://BUCKET/PREFIX or a directory")
    path = Path(location)
    try:
        path.exists()
    except OSError as error:  # a name longer than the file system allows
        raise InputError(f"--results {location[:200]}: {error.strerror or error}; give a directory") from None
    if path.exists() and not path.is_dir():
        raise InputError(f"--results {location}: is not a directory; give a directory or s3://BUCKET/PREFIX")
    if not path.exists():
        if not path.parent.is_dir():
            raise InputError(f"--results {location}: its parent directory {path.parent} does not exist")
        try:
            path.mkdir()
        except FileExistsError:
            pass
        except OSError as error:
            raise InputError(f"--results {location}: cannot create it: {error.strerror or error}") from None
    return DirectoryStore(location)
