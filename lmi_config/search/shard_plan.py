"""What a shard may have run, and which of what its object carries a merge accepts.

A shard's plan is recomputed, never read from its object: from the search's recorded definition
(``search.json``: the model and its task) and the shard's own name (``<instance type>-<K>of<N>``,
the key it writes): the seed's grid of the model on that instance type
(:func:`lmi_config.search.grid.seed_grid`) and the TP sizes :meth:`Shard.sizes` gives shard K of
N — the functions the shard run itself uses, so a merge and a shard never disagree on the
partition.

From a shard object a merge accepts:

- a proven configuration (``exported-and-loaded``) of the search's model that is a trial of the
  shard's plan (one of its TP sizes, a batch size and a length of the grid, the instance type's
  compile target, the search's task), proven by that shard, and that the same object's journal
  records as exported and loaded (a shard journals each success before it records it) and not
  as failed or skipped (a trial a shard never runs);
- a journal entry that records a trial of the shard's plan (failed, skipped, or exported and
  loaded) of the search's model, by that shard.

Anything else is refused and named in the merge's report (a few examples per reason, and how
many there are), and the rest of the object is merged.

PASS: ``shards/trn1.32xlarge-2of3.json`` carrying a proof of TP 4 (the second of TP 2, 4, 8),
recorded in its journal. FAIL: the same object carrying a proof of TP 8 (shard 3's), of TP 4 with
no journal record, or of a length the grid does not have; ``shards/extra.json`` (no shard's name).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from lmi_config.errors import InputError
from lmi_config.search import cache_config
from lmi_config.search.grid import TrialGrid, seed_grid
from lmi_config.search.records import PROVEN_ON, journal_identity
from lmi_config.search.shard_objects import SHARDS_FOLDER, TRIAL_FIELDS, ShardState
from lmi_config.search.shards import Shard, shard_name

# shard_name's form, ``<instance type>-<K>of<N>``; the instance type is checked against the known ones
_SHARD_KEY = re.compile(
    rf"^{SHARDS_FOLDER}/(?P<instance>[a-z0-9]+(?:\.[a-z0-9]+)+)-(?P<index>[0-9]{{1,6}})of(?P<count>[0-9]{{1,6}})\.json$",
    re.ASCII,
)
JOURNALED_OUTCOMES = ("failed", "skipped", cache_config.PROVEN)
EXAMPLES = 3  # trials named per reason; the rest are counted


def search_task(task: str | None, arch: Any) -> str:
    """The search's task: the one given, else the model's (as the search itself picks it)."""
    return task or ("text-generation" if arch.is_text_generation else "feature-extraction")


def model_arch(model: str) -> Any:
    """The architecture of the search's model, for its shards' plans, without a Hub look-up: a local
    directory, the catalog, or this machine's Hub cache (filled by any ``--hub`` command that read
    it). :class:`InputError` saying how to fill the cache otherwise."""
    from lmi_config.modelarch import ModelResolutionError, from_hub, hub_cache_path, resolve_model

    try:
        return resolve_model(model, allow_hub=False)
    except ModelResolutionError as error:
        try:
            if hub_cache_path(model).is_file():
                return from_hub(model)
        except (ModelResolutionError, OSError, ValueError):
            pass
        raise InputError(
            f"{error}; a merge needs the model's architecture to check each shard's trials against its plan: "
            f"run `lmi-config plan --model {model} --hub` once on this machine (it caches it), then merge again"
        ) from None


def parse_shard_key(key: str) -> tuple[str, Shard] | None:
    """(instance type, shard) of a shard object's key as a shard writes it, else None (a key no
    shard writes: another name, a shard out of 1..N, an instance type lmi-config does not know)."""
    from lmi_config.knowledge.instances import resolve_instance

    found = _SHARD_KEY.match(key)
    if found is None:
        return None
    index, count = int(found.group("index")), int(found.group("count"))
    if not 1 <= index <= count:
        return None
    try:
        instance = resolve_instance(found.group("instance"))
    except ValueError:
        return None
    if instance.accelerator != "neuron" or cache_config.compile_target(instance.family) is None:
        return None
    shard = Shard(index, count)
    if f"{SHARDS_FOLDER}/{shard_name(instance.instance_type, shard)}.json" != key:
        return None  # not the spelling a shard writes (leading zeros, an alias)
    return instance.instance_type, shard


@dataclass(frozen=True)
class ShardPlan:
    """The trials one shard may have run: its grid (its own TP sizes) on its instance type."""

    name: str
    model: str
    task: str
    target: str  # optimum-neuron's instance_type of the instance type (trn1, trn2)
    instance_type: str
    whole_sizes: tuple[int, ...]  # the TP sizes of the whole search on this instance type
    grid: TrialGrid  # the shard's own

    def holds(self, entry: dict[str, Any]) -> bool:
        """Whether the entry names a trial of this plan (its numbers, compile target and task)."""
        if not all(_integer(entry.get(field)) for field in TRIAL_FIELDS):
            return False
        return (
            entry["tensor_parallel_size"] in self.grid.tensor_parallel_sizes
            and entry["batch_size"] in self.grid.batch_sizes
            and entry["sequence_length"] in self.grid.sequence_lengths
            and entry.get("instance_type") == self.target
            and entry.get("task") == self.task
        )

    def describe(self) -> str:
        """``TP 4 of trn1.32xlarge's TP 2, 4, 8; batch 1 to 128; lengths 1024 to 16384; trn1, text-generation``."""
        own = ", ".join(map(str, self.grid.tensor_parallel_sizes)) or "none"
        whole = ", ".join(map(str, self.whole_sizes)) or "none"
        return (
            f"TP {own} of {self.instance_type}'s TP {whole}; batch {_span(self.grid.batch_sizes)}; "
            f"lengths {_span(self.grid.sequence_lengths)}; {self.target}, {self.task}"
        )


def shard_plan(
    instance_type: str,
    shard: Shard,
    model: str,
    task: str,
    arch: Any,
    cores: int | None = None,
    cores_per_device: int | None = None,
) -> ShardPlan:
    """The plan of shard ``shard`` of a search of ``model`` on ``instance_type`` (its NeuronCores
    unless ``cores`` / ``cores_per_device`` say how many the shard's machine shows)."""
    from lmi_config.knowledge.instances import resolve_instance

    instance = resolve_instance(instance_type)
    target = cache_config.compile_target(instance.family)
    if target is None:
        raise InputError(f"optimum-neuron compiles for trn1 and trn2 (inf2 as trn1), not {instance.family}")
    whole = seed_grid(
        arch.num_attention_heads,
        arch.max_position_embeddings,
        cores if cores is not None else instance.num_cores,
        cores_per_device if cores_per_device is not None else instance.cores_per_device,
    )
    own = replace(whole, tensor_parallel_sizes=shard.sizes(whole.tensor_parallel_sizes))
    return ShardPlan(
        shard_name(instance.instance_type, shard),
        model,
        task,
        target,
        instance.instance_type,
        whole.tensor_parallel_sizes,
        own,
    )


def accepted(state: ShardState, plan: ShardPlan, shown: str) -> tuple[ShardState, list[str]]:
    """The part of a shard object a merge takes (see the module), and a refusal naming ``shown``
    for each reason something else was left out."""
    refusals = _Refusals(shown)
    journal = []
    for entry in state.journal_entries:
        problem = _journal_problem(entry, plan)
        if problem is None:
            journal.append(entry)
        else:
            refusals.add(("journal entry", "journal entries"), problem, entry)
    journaled = {journal_identity(entry) for entry in journal if entry.get("outcome") == cache_config.PROVEN}
    # a shard never runs a trial it journaled as failed or skipped: a proof of one contradicts its journal
    journaled_not_run = {_trial(entry) for entry in journal if entry.get("outcome") != cache_config.PROVEN}
    proven = []
    for model, entries in state.results.items():
        for entry in entries:
            if not cache_config.proven(entry):
                continue  # a prediction proves nothing; a merge takes only proofs
            problem = _proof_problem(entry, model, plan, journaled, journaled_not_run)
            if problem is None:
                proven.append(entry)
            else:
                refusals.add(("proven configuration", "proven configurations"), problem, entry)
    kept = replace(state, results={plan.model: proven} if proven else {}, journal_entries=journal)
    return kept, refusals.messages()


Problem = tuple[str, str]  # (why, a detail of the entry: the other model or shard it names)


def _proof_problem(
    entry: dict[str, Any],
    model: str,
    plan: ShardPlan,
    journaled: set[tuple[Any, ...]],
    journaled_not_run: set[tuple[Any, ...]],
) -> Problem | None:
    if model != plan.model:
        return f"of another model (this search is of {plan.model})", f"model {_shown(model)}"
    other = _other_shard(entry.get(PROVEN_ON), plan.name)
    if other is not None:
        return "proven on another shard", f"proven on {other}"
    if not plan.holds(entry):
        return f"not trials of shard {plan.name} ({plan.describe()})", ""
    if journal_identity({**entry, "model": plan.model, "outcome": cache_config.PROVEN}) not in journaled:
        return "with no journal record of the trial in this object", ""
    if _trial(entry) in journaled_not_run:
        return "journaled as failed or skipped in this object (a shard never runs such a trial)", ""
    return None


def _trial(entry: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(cache_config.hashable(entry.get(name)) for name in ("instance_type", "task", *TRIAL_FIELDS))


def _journal_problem(entry: dict[str, Any], plan: ShardPlan) -> Problem | None:
    if entry.get("outcome") not in JOURNALED_OUTCOMES:
        return f"not a trial's outcome ({', '.join(JOURNALED_OUTCOMES)})", ""
    if entry.get("model") != plan.model:
        return f"of another model (this search is of {plan.model})", f"model {_shown(entry.get('model'))}"
    other = _other_shard(entry.get("where"), plan.name) or _other_shard(entry.get("shard"), plan.name)
    if other is not None:
        return "recorded by another shard", f"recorded on {other}"
    if not plan.holds(entry):
        return f"not trials of shard {plan.name} ({plan.describe()})", ""
    return None


def _other_shard(where: Any, name: str) -> str | None:
    """The other shard a ``where`` names, when it names one other than ``name``."""
    shard = where.get("shard") if isinstance(where, dict) else where
    return None if shard is None or shard == name else _shown(shard)


class _Refusals:
    """What was left out of one object, by kind and reason, with a few examples each."""

    def __init__(self, shown: str) -> None:
        self.shown = shown
        self.found: dict[tuple[tuple[str, str], str], list[tuple[dict[str, Any], str]]] = {}
        self.counts: dict[tuple[tuple[str, str], str], int] = {}

    def add(self, kind: tuple[str, str], problem: Problem, entry: dict[str, Any]) -> None:
        """Count ``entry`` (of ``kind``: singular, plural) as left out for ``problem``."""
        why, detail = problem
        key = (kind, why)
        self.counts[key] = self.counts.get(key, 0) + 1
        examples = self.found.setdefault(key, [])
        if len(examples) < EXAMPLES:
            examples.append((entry, detail))

    def messages(self) -> list[str]:
        """One line per reason, naming a few of its entries and counting the others."""
        lines = []
        for (kind, why), examples in self.found.items():
            count = self.counts[(kind, why)]
            named = "; ".join(_label(entry, detail) for entry, detail in examples)
            more = f" and {count - len(examples)} more" if count > len(examples) else ""
            noun = kind[0] if count == 1 else kind[1]
            lines.append(f"{self.shown}: {count} {noun} not merged, {why}: {named}{more}")
        return lines


def _label(entry: dict[str, Any], detail: str) -> str:
    """``TP 8, batch 32, length 2048 (trn1, text-generation, exported-and-loaded)``."""
    numbers = ", ".join(f"{shown} {_shown(entry.get(field))}" for field, shown in _TRIAL_WORDS)
    outcome = entry.get("outcome", entry.get("provenance"))
    about = [
        _shown(entry.get("instance_type")),
        _shown(entry.get("task")),
        _shown(outcome),
        *filter(None, [detail]),
    ]
    return f"{numbers} ({', '.join(about)})"


_TRIAL_WORDS = (("tensor_parallel_size", "TP"), ("batch_size", "batch"), ("sequence_length", "length"))


def _shown(value: Any, limit: int = 40) -> str:
    """A value from an object as a message shows it: ints and short printable text as they are,
    anything else as its repr (control characters escaped), cut to ``limit`` characters."""
    if _integer(value) or (isinstance(value, str) and value.isprintable() and 0 < len(value) <= limit):
        return str(value)
    text = repr(value[:limit] if isinstance(value, str) else value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def printable(text: str, limit: int = 300) -> str:
    """A name read from a store (an object's key) as a message shows it: control characters
    escaped, cut to ``limit`` characters."""
    shown = "".join(character if character.isprintable() else repr(character)[1:-1] for character in text)
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


def _span(values: Iterable[int]) -> str:
    listed = list(values)
    if not listed:
        return "none"
    return str(listed[0]) if len(listed) == 1 else f"{listed[0]} to {listed[-1]}"


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0
