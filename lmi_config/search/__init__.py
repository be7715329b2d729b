"""``search``: the optimal-export-configuration workflow of seed 000, run for real.

Each candidate (TP, batch, sequence length) is exported with ``optimum-cli export neuron`` and
loaded with the seed's one-liner, each in its own process, in a directory of this search's own;
valid configurations go to a results file in optimum-neuron's inference-cache-config format,
merged into it (under the file's lock, marked ``exported-and-loaded``) after every success;
failures and skips go to a journal beside it, so an interrupted search resumes where it stopped
and never repeats a trial. Entries other runs put in the file (``plan --cache-config``'s
predictions, other models) are kept, and a prediction is not taken for a result. ``--strategy seed`` keeps the seed's exact order; ``guided`` (the
default) lets the one judge rule out what cannot fit within the memory model's stated margin,
probes each (TP, batch)'s longest length from the prediction, and settles the pairs in the
planner's order of value for the workload (``search/order.py``), so a search stopped early has
proven what ``plan`` ranks highest.
"""

from __future__ import annotations

from lmi_config.search.session import STRATEGIES, SearchOptions, SearchResult, run_search

__all__ = ["STRATEGIES", "SearchOptions", "SearchResult", "run_search"]
