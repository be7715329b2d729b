"""Option combinations a pinned vLLM release's model runner refuses on the first step that uses them
(``data/vllm_runner_refusals.json``, generated from each release's vllm/worker/model_runner.py by
``scripts/gen_vllm_runner_refusals.py``)."""

from __future__ import annotations

from typing import NamedTuple

from lmi_config.knowledge import load_data


class RunnerRefusal(NamedTuple):
    """One refusal as one release's model runner has it."""

    function: str
    condition: str
    message: str
    source: str  # the line at the release's tag


def runner_refusal(vllm_version: str | None, name: str) -> RunnerRefusal | None:
    """The refusal ``name`` (``chunked-prefill-with-prefix-caching``) of an image's vLLM version; None where
    its runner makes none or the version is not listed."""
    row = load_data("vllm_runner_refusals.json")["versions"].get(vllm_version or "")
    entry = (row or {}).get("refusals", {}).get(name)
    if entry is None:
        return None
    return RunnerRefusal(entry["function"], entry["condition"], entry["message"], entry["source"])
