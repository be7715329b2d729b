"""What the judge finds wrong with a shape."""

from typing import NamedTuple

TP_KEY = "option.tensor_parallel_degree"


class Problem(NamedTuple):
    """One part of the verdict.

    ``check`` is the slug of the lint rule that reports it. ``blocks_planning`` marks warnings
    that the planner still avoids (a TP degree no guide lists and nobody has run); errors always
    block.
    """

    check: str
    severity: str  # error | warning | info
    message: str
    key: str | None = TP_KEY  # the canonical key the problem is about (its line in the file)
    blocks_planning: bool = False

    @property
    def blocking(self) -> bool:
        """Whether a planner must not choose a configuration with this problem."""
        return self.severity == "error" or self.blocks_planning
