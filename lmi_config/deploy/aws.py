"""boto3 clients for deploy: imported only here, only when deploy calls AWS.

Every client (SageMaker, S3, CloudWatch Logs, Application Auto Scaling, STS) uses the same
``endpoint_url`` when one is given, so a private endpoint or a test server receives every call
and nothing reaches AWS by accident; throttling and transient errors are retried with botocore's
standard retry mode.
"""

from __future__ import annotations

from typing import Any

from lmi_config import __version__
from lmi_config.errors import DeployError

RETRY_ATTEMPTS = 5


class Clients:
    """One lazily created boto3 client per service, all in one region and behind one endpoint URL."""

    def __init__(self, region: str, endpoint_url: str | None = None, attempts: int = RETRY_ATTEMPTS) -> None:
        self.region = region
        self.endpoint_url = endpoint_url
        self.attempts = attempts
        self._session: Any = None
        self._clients: dict[str, Any] = {}

    def __call__(self, service: str) -> Any:
        if service not in self._clients:
            try:
                import boto3
                from botocore.config import Config
            except ImportError:
                raise DeployError(
                    "deploy needs boto3: pip install 'lmi-config[aws]' (lint and render do not)"
                ) from None
            if self._session is None:
                self._session = boto3.session.Session(region_name=self.region)
            config = Config(
                retries={"mode": "standard", "max_attempts": self.attempts},
                user_agent_extra=f"lmi-config/{__version__}",
            )
            self._clients[service] = self._session.client(
                service, endpoint_url=self.endpoint_url, config=config
            )
        return self._clients[service]


def aws_errors() -> tuple[type[BaseException], ...]:
    """The exceptions a boto3 call raises for AWS-side and connection failures."""
    from botocore.exceptions import BotoCoreError, ClientError

    return (ClientError, BotoCoreError)


def error_code(error: BaseException) -> str:
    response = getattr(error, "response", None) or {}
    return str(response.get("Error", {}).get("Code", ""))


def describe_error(error: BaseException) -> str:
    """``CreateModel: ValidationException: …`` (or botocore's own sentence)."""
    response = getattr(error, "response", None)
    if response:
        operation = getattr(error, "operation_name", "")
        details = response.get("Error", {})
        return f"{operation}: {details.get('Code', 'Error')}: {details.get('Message', '')}".strip()
    text = str(error)
    if "credentials" in text.lower():
        return f"{text} (set AWS_PROFILE or AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY)"
    return text


def is_missing(error: BaseException) -> bool:
    """Whether a describe call failed because the resource does not exist."""
    message = str((getattr(error, "response", None) or {}).get("Error", {}).get("Message", ""))
    if error_code(error) in (
        "ObjectNotFoundException",
        "ResourceNotFound",
    ):  # Application Auto Scaling, CloudWatch
        return True
    return error_code(error) in ("ValidationException", "ResourceNotFoundException", "NoSuchKey") and (
        "Could not find" in message
        or "not found" in message.lower()
        or error_code(error) != "ValidationException"
    )
