"""Which trial comes next: the seed's exact order, or the guided order.

Both are pure functions of what has been recorded (successes in the results file, failures and
skips in the journal), so a resumed search continues exactly where it stopped and never runs a
recorded trial again.

``seed`` is the workflow of seed 000 as written: increasing TP, decreasing batch, decreasing
sequence length; after a success the shorter lengths of that (TP, batch) are skipped; on resume
a (TP, batch) with a valid configuration is skipped, and so are batches larger than a TP's
largest valid one. The journal adds one rule: a trial that failed is not run again.

``guided`` (the default) uses the same monotonicity the seed relies on — what fits at a length
fits at every shorter one, and (a fact of the memory the cache takes) at every smaller batch —
plus the judge: a candidate whose predicted memory is over the budget even if the model
overestimates by its stated error margin is skipped (and journaled), and the longest length of
each (TP, batch) is found by probing the judge's predicted boundary and its neighbours instead
of walking down from the longest. Every configuration it records was exported and loaded.
It settles the (TP, batch) pairs in the order it is given — the planner's order of value
(:func:`lmi_config.plan.order.order_pairs`: the pairs ``plan`` ranks best for the workload and
objective first), else the seed's — so a search stopped early has proven the configurations worth
the most. The order decides only which pair comes next: what a pair's outcomes imply, what is
skipped and what is tried are the same in any order, so run to its end it finds the same longest
length per (TP, batch).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from lmi_config.search.grid import Key, Prediction, Trial, TrialGrid

NOT_MONOTONE = ("other",)  # a crash nobody classified says nothing about larger configurations


@dataclass
class Outcomes:
    """What is recorded: successes (results file), failures and skips (journal)."""

    successes: set[Key] = field(default_factory=set)
    failures: dict[Key, str] = field(default_factory=dict)  # key -> failure class
    skipped: dict[Key, str] = field(default_factory=dict)  # key -> reason

    def tested(self, key: Key) -> bool:
        return key in self.successes or key in self.failures


class SeedStrategy:
    """The seed's order and skip rules, exactly."""

    name = "seed"

    def __init__(self, grid: TrialGrid):
        self.grid = grid

    def skips(self, outcomes: Outcomes) -> list[tuple[Trial, str]]:
        """The seed skips nothing before trying it."""
        return []

    def _pair_open(self, outcomes: Outcomes, tensor_parallel: int, batch: int) -> bool:
        valid = [key[1] for key in outcomes.successes if key[0] == tensor_parallel]
        if valid and batch > max(valid):
            return False  # larger batches were tested before and failed
        return not any(key[0] == tensor_parallel and key[1] == batch for key in outcomes.successes)

    def next_trial(self, outcomes: Outcomes) -> Trial | None:
        """The first trial in the seed's order its rules (and the journal) do not skip."""
        for trial in self.grid.seed_order():
            if not self._pair_open(outcomes, trial.tensor_parallel_size, trial.batch_size):
                continue
            if trial.key not in outcomes.failures:
                return trial
        return None

    def remaining(self, outcomes: Outcomes) -> int:
        """At most this many trials are left."""
        return sum(
            1
            for trial in self.grid.seed_order()
            if self._pair_open(outcomes, trial.tensor_parallel_size, trial.batch_size)
            and trial.key not in outcomes.failures
        )


class GuidedStrategy:
    """Skips what cannot fit within the memory model's margin; probes each boundary from the prediction."""

    name = "guided"

    def __init__(
        self,
        grid: TrialGrid,
        predict: Callable[[Trial], Prediction],
        margin: float,
        pair_order: Sequence[tuple[int, int]] | None = None,
    ):
        self.grid = grid
        self.predict = predict
        self.margin = margin
        self.pairs = list(pair_order) if pair_order is not None else grid.seed_pairs()
        if sorted(self.pairs) != sorted(grid.seed_pairs()):
            raise ValueError("the pair order must hold every (TP, batch) pair of the grid once")

    def skip_reason(self, trial: Trial) -> str | None:
        """Why the judge rules a trial out, or None."""
        prediction = self.predict(trial)
        if prediction.blocking:
            slug, message = prediction.blocking[0]
            return f"{slug}: {message}"
        if prediction.certainly_over(self.margin):
            return (
                f"memory-exceeds-budget: predicted {prediction.describe()}, over the budget even if the "
                f"estimate is {self.margin:.0%} too high"
            )
        return None

    def skips(self, outcomes: Outcomes) -> list[tuple[Trial, str]]:
        """Trials ruled out and not yet journaled (nor already run)."""
        found = []
        for trial in self.grid.seed_order():
            if trial.key in outcomes.skipped or outcomes.tested(trial.key):
                continue
            reason = self.skip_reason(trial)
            if reason is not None:
                found.append((trial, reason))
        return found

    def next_trial(self, outcomes: Outcomes) -> Trial | None:
        """The next probe of the first (TP, batch), in the strategy's pair order, whose longest
        length is not settled."""
        for tensor_parallel, batch in self.pairs:
            unknown, untested_answer = self._pair(outcomes, tensor_parallel, batch)
            if unknown:
                return Trial(tensor_parallel, batch, self._probe(tensor_parallel, batch, unknown, outcomes))
            if untested_answer is not None:
                return Trial(tensor_parallel, batch, untested_answer)
        return None

    def remaining(self, outcomes: Outcomes) -> int:
        """At most this many trials are left."""
        total = 0
        for tensor_parallel in self.grid.tensor_parallel_sizes:
            for batch in self.grid.batch_sizes:
                unknown, untested_answer = self._pair(outcomes, tensor_parallel, batch)
                total += len(unknown) + (1 if unknown or untested_answer is not None else 0)
        return total

    def _pair(self, outcomes: Outcomes, tensor_parallel: int, batch: int) -> tuple[list[int], int | None]:
        """The lengths still unknown for a (TP, batch), and its answer when only implied (to be tested)."""
        lengths = [
            length
            for length in self.grid.sequence_lengths
            if (tensor_parallel, batch, length) not in outcomes.skipped
            and outcomes.failures.get((tensor_parallel, batch, length)) not in NOT_MONOTONE
            and self.skip_reason(Trial(tensor_parallel, batch, length)) is None
        ]
        fits = [length for length in lengths if self._fits(outcomes, tensor_parallel, batch, length)]
        fails = [length for length in lengths if self._fails(outcomes, tensor_parallel, batch, length)]
        lowest_failure = min(fails, default=None)
        longest_fit = max(fits, default=None)
        unknown = [
            length
            for length in lengths
            if (longest_fit is None or length > longest_fit)
            and (lowest_failure is None or length < lowest_failure)
            and not outcomes.tested((tensor_parallel, batch, length))
        ]
        answer = None
        if longest_fit is not None and not outcomes.tested((tensor_parallel, batch, longest_fit)):
            answer = longest_fit
        return unknown, answer

    def _fits(self, outcomes: Outcomes, tensor_parallel: int, batch: int, length: int) -> bool:
        # a success fits every shorter length and every smaller batch at the same TP
        return any(
            key[0] == tensor_parallel and key[1] >= batch and key[2] >= length for key in outcomes.successes
        )

    def _fails(self, outcomes: Outcomes, tensor_parallel: int, batch: int, length: int) -> bool:
        # a failure (memory, compile, host RAM, time) fails every longer length and larger batch
        return any(
            key[0] == tensor_parallel and key[1] <= batch and key[2] <= length and kind not in NOT_MONOTONE
            for key, kind in outcomes.failures.items()
        )

    def _probe(self, tensor_parallel: int, batch: int, unknown: list[int], outcomes: Outcomes) -> int:
        """First the judge's predicted boundary (the longest unknown length predicted to fit, else the
        shortest unknown), then bisection of what is still unknown."""
        started = any(
            outcomes.tested((tensor_parallel, batch, length)) for length in self.grid.sequence_lengths
        )
        if started:
            return unknown[len(unknown) // 2]
        predicted = [length for length in unknown if self.predict(Trial(tensor_parallel, batch, length)).fits]
        return max(predicted) if predicted else unknown[0]
