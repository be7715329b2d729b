"""One shard of a search: ``lmi-config search --shard K/N --results LOCATION``, on a machine of
the user's or as the entry point of a SageMaker job (the job runs this very command).

The shard runs the local search (:func:`lmi_config.search.run_search`) on its TP sizes, with its
results file and journal in a directory of its own under ``--work-dir``; after every recorded
outcome both are published as the shard's own object in the results location (replaced only
if it is still the version this shard wrote last: a second copy of the same shard running
somewhere is stopped instead of overwriting it). Started again — on the same machine or, for a
retried job, on a new one — it first merges its object back into its local files, so the
search resumes where the object says and repeats no trial (of what the object carries, only what
a merge would take: :mod:`lmi_config.search.shard_plan`). A shard of more shards than its
instance type has TP sizes runs nothing and is complete at once.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from lmi_config.errors import InputError
from lmi_config.search.records import SearchPaths, check_work_dir, make_directory
from lmi_config.search.results_store import ConflictError, open_store
from lmi_config.search.session import SearchOptions, SearchResult, run_search
from lmi_config.search.shard_merge import merge_state
from lmi_config.search.shard_objects import (
    SearchDefinition,
    join_search,
    parse_shard,
    shard_document,
    shard_key,
)
from lmi_config.search.shard_plan import ShardPlan, accepted, search_task, shard_plan
from lmi_config.search.shards import Shard, shard_name
from lmi_config.search.system import Machine, machine

JOB_NAME_VARIABLE = "LMI_CONFIG_JOB_NAME"  # set by the coordinator on the jobs it starts


class _Publisher:
    """Writes the shard's object from its local files, conditionally on its last version."""

    def __init__(
        self, store: Any, key: str, search_id: str, name: str, where: dict[str, Any], paths: SearchPaths
    ):
        self.store, self.key, self.search_id, self.name, self.where, self.paths = (
            store,
            key,
            search_id,
            name,
            where,
            paths,
        )
        self.version: str | None = None

    def __call__(self, complete: bool = False) -> None:
        document = shard_document(
            self.search_id,
            self.name,
            self.where,
            _read(self.paths.results),
            _read(self.paths.journal),
            complete,
        )
        try:
            self.version = self.store.write(
                self.key, document, if_match=self.version, if_absent=self.version is None
            )
        except ConflictError:
            raise InputError(
                f"{self.store.describe(self.key)}: changed by another run of shard {self.name} since this one "
                "wrote it; run each shard once at a time (this run stopped, its results so far are in that object)"
            ) from None


def _read(path: Path) -> bytes | None:
    return path.read_bytes() if path.exists() else None


def run_shard(
    options: SearchOptions,
    shard: Shard,
    location: str,
    *,
    region: str | None = None,
    endpoint_url: str | None = None,
    report: Callable[[str], None] | None = None,
) -> SearchResult:
    """Run shard ``shard`` of the search in ``location`` (``s3://…`` or a directory)."""
    if options.output is not None:
        raise InputError("--shard writes to --results; --output is for a search on one machine (or a merge)")
    check_work_dir(Path(options.work_dir))
    emit = report or (lambda text: None)
    found = machine(options.instance, options.cores, options.cores_per_device, options.python)
    name = shard_name(found.instance_type, shard)
    plan = _plan(options, found, shard)
    nothing = _nothing_to_run(plan, shard, options.model)
    if options.dry_run:  # the shard's candidates; nothing is created, not even the location
        if nothing is not None:
            return SearchResult("dry-run", options.strategy, dry_run_text=nothing + "\n")
        return run_search(replace(options, instance=found.instance_type, shard=shard))
    store = open_store(location, region=region, endpoint_url=endpoint_url)
    definition = SearchDefinition(
        options.model, options.strategy, options.task, options.backend, options.dtype
    )
    search_id = join_search(store, definition)
    where = {
        "shard": name,
        "instance": found.instance_type,
        "host": socket.gethostname(),
        "job": os.environ.get(JOB_NAME_VARIABLE),
    }
    own = Path(options.work_dir) / f"shard-{search_id}-{name}"
    make_directory(Path(options.work_dir), "--work-dir")
    make_directory(own, "--work-dir")
    paths = SearchPaths.beside(own / "results.json")
    publish = _Publisher(store, shard_key(name), search_id, name, where, paths)
    existing = store.read(shard_key(name))
    if existing is not None:
        shown = store.describe(shard_key(name))
        state, left_out = accepted(parse_shard(existing[0], shown, shard_key(name), search_id), plan, shown)
        for refusal in left_out:  # not this shard's to resume from: its next object leaves them out
            emit(refusal)
        merge_state(state, paths.results, paths.journal, options.model)
        publish.version = existing[1]
    shard_options = replace(
        options,
        output=str(paths.results),
        instance=found.instance_type,
        cores=found.available_cores,
        cores_per_device=found.cores_per_device,
        shard=shard,
        where=where,
    )
    publish()  # the shard exists (and is seen running) before its first trial
    if nothing is not None:
        emit(nothing)
        publish(complete=True)
        return SearchResult("complete", options.strategy, paths.results, paths.journal)
    result = run_search(shard_options, report, after_record=publish)
    publish(complete=result.status == "complete")
    return result


def _plan(options: SearchOptions, found: Machine, shard: Shard) -> ShardPlan:
    """The trials this shard may run (the plan a merge checks its object against)."""
    from lmi_config.modelarch import ModelResolutionError, resolve_model

    try:
        arch = resolve_model(options.model, allow_hub=options.hub)
    except ModelResolutionError as error:
        raise InputError(str(error)) from None
    task = search_task(options.task, arch)
    return shard_plan(
        found.instance_type, shard, options.model, task, arch, found.available_cores, found.cores_per_device
    )


def _nothing_to_run(plan: ShardPlan, shard: Shard, model: str) -> str | None:
    """Why a shard of more shards than its instance type has TP sizes runs nothing, or None."""
    sizes = plan.whole_sizes
    if not sizes or plan.grid.tensor_parallel_sizes:
        return None  # no candidate at all is the search's own refusal
    return (
        f"shard {shard.index}/{shard.count}: {model} has {len(sizes)} TP size(s) on {plan.instance_type} "
        f"({', '.join(map(str, sizes))}), fewer than {shard.count} shards: this shard has none to run, "
        f"complete at once (up to {len(sizes)} shard(s) split the search on {plan.instance_type})"
    )
