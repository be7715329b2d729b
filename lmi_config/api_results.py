"""The result types of :mod:`lmi_config.api` for explain, convert and deploy (``lmi_config.api`` names
them; they live here so that a lint, which needs none of them, does not build them:
benchmarks/lint_speed.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lmi_config.lint import LintResult

if TYPE_CHECKING:
    from lmi_config.deploy import DeployPlan, Outcome
    from lmi_config.deploy.cleanup import Removal
    from lmi_config.deploy.deletion import DeletionPlan

__all__ = ["ConvertResult", "DeletionResult", "DeployResult", "ExplainResult"]


@dataclass
class ExplainResult:
    """One document per configuration unit (what the JSON output prints) and the lint run behind it."""

    documents: list[dict[str, Any]] = field(default_factory=list)
    lint: LintResult = field(default_factory=LintResult)

    @property
    def errors(self) -> int:
        return self.lint.errors


@dataclass
class ConvertResult:
    """The converted text, what could not be carried over (each a sentence), and the keys that hold
    a credential (written only when the output is a file)."""

    text: str
    format: str
    lost: list[str] = field(default_factory=list)
    credentials: list[str] = field(default_factory=list)


@dataclass
class DeployResult:
    """A deploy run: the plan, and what happened (None for a dry run, a refusal or a "no")."""

    plan: DeployPlan
    outcome: Outcome | None = None
    declined: bool = False

    @property
    def refused(self) -> list[str]:
        """Error-level findings of the rendered configuration: nothing was called."""
        return self.plan.blocking


@dataclass
class DeletionResult:
    """``deploy --delete``: what was to go and stay (the plan), and what happened (None: dry run or "no")."""

    plan: DeletionPlan
    removal: Removal | None = None
    declined: bool = False
