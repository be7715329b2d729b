"""``plan --cache-config`` writes what a cache config is — a list of exportable configurations, as
seed 000's search records them: each (TP, batch) the judge accepts at its longest sequence length
among the seed's lengths — not only the one length the plan's workload asks for (issue 18)."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_cli

from lmi_config import api
from lmi_config.modelarch import from_catalog

MISTRAL = "mistralai/Mistral-7B-Instruct-v0.2"
INSTANCE = "inf2.24xlarge"


def _feasible_pairs(length: int) -> set[tuple[int, int]]:
    result = api.plan(model=MISTRAL, instances=(INSTANCE,), min_sequence_length=length, top=0)
    return {
        (row.tensor_parallel_degree, row.batch_size)
        for row in result.feasible
        if row.sequence_length == length
    }


def test_the_cache_config_holds_each_pair_at_its_longest_exportable_length(tmp_path: Path) -> None:
    cache = tmp_path / "cache.json"
    result = run_cli("plan", "--model", MISTRAL, "--instance", INSTANCE, "--cache-config", str(cache))
    assert result.returncode == 0, result.stderr
    entries = json.loads(cache.read_text())[MISTRAL]
    arch = from_catalog(MISTRAL)
    assert arch is not None and arch.max_position_embeddings is not None
    lengths = {entry["sequence_length"] for entry in entries}
    assert len(lengths) > 1  # not one sequence length per plan run
    seed_lengths = {1024 * 2**power for power in range(8) if 1024 * 2**power < arch.max_position_embeddings}
    assert lengths <= seed_lengths and max(lengths) > 2048  # beyond the default workload's 2048
    pairs = [(entry["tensor_parallel_size"], entry["batch_size"]) for entry in entries]
    assert len(pairs) == len(set(pairs))  # each (TP, batch) once, at one length
    for entry in entries:
        pair, length = (entry["tensor_parallel_size"], entry["batch_size"]), entry["sequence_length"]
        assert pair in _feasible_pairs(length), f"{entry} is not exportable as judged"
        if length * 2 < arch.max_position_embeddings:
            assert pair not in _feasible_pairs(length * 2), f"{entry}: a longer length is exportable too"
    # every pair the plan's own workload accepts is in the file (at that length or a longer one)
    assert _feasible_pairs(2048) <= set(pairs)
    again = run_cli("plan", "--model", MISTRAL, "--instance", INSTANCE, "--cache-config", str(cache))
    assert again.returncode == 0 and "0 new entries" in again.stderr  # merging again adds nothing
