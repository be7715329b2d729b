"""The checked-in data/djl_properties.json: its schema, its ranges, and facts of djl-serving it must hold.

The facts are the ones issue 10 names, each read from the container's code on its release branches
(see the ``source`` URL of each entry); a regenerated file that loses one fails here.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from pydantic import ValidationError

from lmi_config.knowledge import DATA_DIR, load_data
from lmi_config.knowledge.djl_properties import DjlCatalogue, djl_catalogue
from lmi_config.knowledge.schemas import schema_for

SCHEMA = schema_for("djl_properties.json")

IDENTITY = {
    "classes": ("class",),
    "fields": ("class", "field"),
    "validators": ("class", "name"),
    "extra_keys": ("class", "key"),
    "modules": ("module",),
    "recommender": ("method",),
    "recommender_maps": ("name",),
    "recommender_defaults": ("key", "rolling_batch"),
}


@pytest.fixture(scope="module")
def catalogue() -> DjlCatalogue:
    return djl_catalogue()


def accepted(catalogue: DjlCatalogue, class_name: str, field: str, branch: str) -> frozenset[str]:
    """The values the class lets through; the test fails where the code lists none."""
    values, _case_insensitive = catalogue.accepted_values(class_name, field, branch)
    assert values is not None, (class_name, field, branch)
    return values


def branches_from(catalogue: DjlCatalogue, first: str, last: str = "master") -> list[str]:
    names = [release.branch for release in catalogue.releases]
    return names[names.index(first) : names.index(last) + 1]


# --- schema and ranges ------------------------------------------------------------------------


def test_the_file_is_sorted_deterministic_json() -> None:
    text = (DATA_DIR / "djl_properties.json").read_text(encoding="utf-8")
    assert text == json.dumps(json.loads(text), indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def test_every_release_branch_is_listed_in_release_order(catalogue: DjlCatalogue) -> None:
    branches = [release.branch for release in catalogue.releases]
    assert branches[0] == "0.25.0-dlc" and branches[-1] == "master"
    assert "0.33.0-dlc" in branches and "0.35.1-dlc" in branches
    assert [b for b in branches if "-lmi" in b] == [f"0.36.0-lmi{n}-dlc" for n in range(18, 28)]


def test_release_branches_carry_the_djl_version_and_lmi_number_of_releases_json(
    catalogue: DjlCatalogue,
) -> None:
    known = {(row["djl"], row.get("lmi")) for row in load_data("releases.json")["releases"]}
    assert (catalogue.release("0.33.0-dlc").djl, catalogue.release("0.33.0-dlc").lmi) == ("0.33.0", "15")
    assert catalogue.release("0.36.0-lmi27-dlc").lmi == "27"
    for release in catalogue.releases:
        assert release.in_releases_json == (
            (release.djl, release.lmi) in known and release.branch != "master"
        )
    assert catalogue.branch_for("0.33.0") == "0.33.0-dlc"
    assert catalogue.branch_for("0.36.0", "20") == "0.36.0-lmi20-dlc"


def test_entries_of_one_thing_never_overlap_and_identical_neighbours_are_merged(
    catalogue: DjlCatalogue,
) -> None:
    document = load_data("djl_properties.json")
    for kind, keys in IDENTITY.items():
        runs: dict[tuple, list[dict[str, Any]]] = {}
        for entry in document[kind]:
            runs.setdefault(tuple(entry[key] for key in keys), []).append(entry)
        for identity, items in runs.items():
            items.sort(key=lambda entry: catalogue.branch_index(entry["first"]))
            for before, after in zip(items, items[1:], strict=False):
                gap = catalogue.branch_index(after["first"]) - catalogue.branch_index(before["last"])
                assert gap >= 1, (kind, identity)
                if gap == 1:  # adjacent: they must differ, or the generator should have merged them
                    strip = ("first", "last", "source")
                    assert {k: v for k, v in before.items() if k not in strip} != {
                        k: v for k, v in after.items() if k not in strip
                    }, (kind, identity)


def test_a_source_at_another_commit_than_its_first_branch_is_rejected() -> None:
    document = copy.deepcopy(load_data("djl_properties.json"))
    entry = document["fields"][0]
    other = next(r["commit"] for r in document["releases"] if r["branch"] != entry["first"])
    entry["source"] = entry["source"].replace(entry["source"].split("/")[6], other)
    with pytest.raises(ValidationError, match="is not at the commit of"):
        SCHEMA.model_validate(document)


def test_an_unknown_branch_or_key_is_rejected() -> None:
    document = copy.deepcopy(load_data("djl_properties.json"))
    document["validators"][0]["last"] = "0.99.0-dlc"
    with pytest.raises(ValidationError, match="unknown branch"):
        SCHEMA.model_validate(document)
    document = copy.deepcopy(load_data("djl_properties.json"))
    document["fields"][0]["typo"] = 1
    with pytest.raises(ValidationError, match="typo"):
        SCHEMA.model_validate(document)
    with pytest.raises(ValueError, match="unknown key 'typo'"):
        DjlCatalogue(document).fields  # noqa: B018 - the plain loader refuses it too


def test_every_error_and_coercion_carries_the_containers_message(catalogue: DjlCatalogue) -> None:
    outcomes = [outcome for validator in catalogue.validators for outcome in validator.outcomes]
    assert len(outcomes) > 50
    assert all(outcome.message for outcome in outcomes)


# --- facts of djl-serving ---------------------------------------------------------------------


def test_hf_properties_accept_only_short_dtype_names_from_025_to_master(catalogue: DjlCatalogue) -> None:
    for branch in branches_from(catalogue, "0.25.0-dlc"):
        accepted, case_insensitive = catalogue.accepted_values("HuggingFaceProperties", "dtype", branch)
        assert accepted == {"auto", "fp32", "fp16", "bf16", "int8"}, branch
        assert case_insensitive, branch  # construct_kwargs_dtype lower-cases the value first
    messages = {o.message for _v, o in catalogue.outcomes_for("HuggingFaceProperties", "dtype", "0.30.0-dlc")}
    assert messages == {"Invalid data type: {dtype}"}


def test_the_async_vllm_service_builds_hf_and_vllm_properties_so_dtype_is_short_names_only(
    catalogue: DjlCatalogue,
) -> None:
    for branch in branches_from(catalogue, "0.33.0-dlc"):
        module = catalogue.module_at("djl_python.lmi_vllm.vllm_async_service", branch)
        assert module is not None and set(module.instantiates) == {
            "HuggingFaceProperties",
            "VllmRbProperties",
        }
        per_class = [accepted(catalogue, name, "dtype", branch) for name in module.instantiates]
        assert frozenset.intersection(*per_class) == {"auto", "fp32", "fp16", "bf16"}
        assert "float16" in accepted(catalogue, "VllmRbProperties", "dtype", branch)


def test_the_async_vllm_service_exists_from_033(catalogue: DjlCatalogue) -> None:
    assert catalogue.module_at("djl_python.lmi_vllm.vllm_async_service", "0.32.0-dlc") is None
    module = catalogue.module_at("djl_python.lmi_vllm.vllm_async_service", "0.33.0-dlc")
    assert module is not None and module.handler
    assert catalogue.module_at("djl_python.transformers_neuronx", "0.34.0-dlc") is not None
    assert catalogue.module_at("djl_python.transformers_neuronx", "0.35.0-dlc") is None


def test_tnx_rejects_dynamic_batching_together_with_rolling_batch(catalogue: DjlCatalogue) -> None:
    for branch in branches_from(catalogue, "0.26.0-dlc", "0.34.0-dlc"):
        validator = next(
            v
            for v in catalogue.validators_of("TransformerNeuronXProperties", branch)
            if v.name == "validate_batch_size"
        )
        [outcome] = validator.outcomes
        assert outcome.kind == "error"
        assert outcome.message and outcome.message.startswith(
            "Dynamic batching and rolling batch cannot be enabled at the same time"
        )
        assert outcome.when[0] == "batch_size > 1"
        assert "rolling_batch" in validator.reads


def test_tnx_coerces_an_unknown_rolling_batch_to_auto_with_a_warning(catalogue: DjlCatalogue) -> None:
    for branch in branches_from(catalogue, "0.28.0-dlc", "0.34.0-dlc"):
        [(validator, outcome)] = catalogue.outcomes_for(
            "TransformerNeuronXProperties", "rolling_batch", branch
        )
        assert (validator.mode, outcome.kind, outcome.coerces_to) == ("before", "coercion", "auto")
        assert outcome.allowed_values == ("auto", "disable", "lmi-dist", "tnx", "vllm")
        # the coercion runs before the Enum, so no value is an error
        assert catalogue.accepted_values("TransformerNeuronXProperties", "rolling_batch", branch) == (
            None,
            False,
        )


def test_tnx_optimum_loader_needs_the_optimum_partition_schema(catalogue: DjlCatalogue) -> None:
    for branch in branches_from(catalogue, "0.27.0-dlc", "0.34.0-dlc"):
        validator = next(
            v
            for v in catalogue.validators_of("TransformerNeuronXProperties", branch)
            if v.name == "validate_schema_loader_combination"
        )
        messages = [o.message for o in validator.outcomes]
        assert (
            "Optimum model loader does not support non-optimum cache partitioning. Supported values are: optimum"
            in messages
        )
        assert validator.reads == ("model_loader", "partition_schema")


def test_nxdi_model_loader_first_appears_at_032(catalogue: DjlCatalogue) -> None:
    having = []
    for branch in branches_from(catalogue, "0.25.0-dlc"):
        field = catalogue.fields_of("TransformerNeuronXProperties", branch).get("model_loader")
        if field is not None and "nxdi" in (field.allowed or []):
            having.append(branch)
    assert having == branches_from(catalogue, "0.32.0-dlc", "0.34.0-dlc")


def test_legacy_partition_schema_is_accepted_up_to_029(catalogue: DjlCatalogue) -> None:
    assert "legacy" in accepted(catalogue, "TransformerNeuronXProperties", "partition_schema", "0.29.0-dlc")
    assert "legacy" not in accepted(
        catalogue, "TransformerNeuronXProperties", "partition_schema", "0.30.0-dlc"
    )


def test_vllm_quantize_is_a_fixed_list_without_bitsandbytes_up_to_030(catalogue: DjlCatalogue) -> None:
    for branch in branches_from(catalogue, "0.26.0-dlc", "0.30.0-dlc"):
        values = accepted(catalogue, "VllmRbProperties", "quantize", branch)
        assert "awq" in values and "bitsandbytes" not in values, branch
    assert catalogue.accepted_values("VllmRbProperties", "quantize", "0.31.0-dlc") == (None, False)


def test_cpu_offload_gb_per_gpu_is_an_integer_in_029_to_031(catalogue: DjlCatalogue) -> None:
    annotations = {
        branch: field.annotation
        for branch in branches_from(catalogue, "0.28.0-dlc")
        if (field := catalogue.fields_of("VllmRbProperties", branch).get("cpu_offload_gb_per_gpu"))
    }
    assert [b for b, a in annotations.items() if a == "Optional[int]"] == [
        "0.29.0-dlc",
        "0.30.0-dlc",
        "0.31.0-dlc",
    ]
    assert all(
        a == "float"
        for b, a in annotations.items()
        if catalogue.branch_index(b) >= catalogue.branch_index("0.32.0-dlc")
    )
    alias = catalogue.fields_of("VllmRbProperties", "0.32.0-dlc")["cpu_offload_gb_per_gpu"].alias
    assert alias == "cpu_offload_gb"


@pytest.mark.parametrize(
    ("field", "first"),
    [("tgi_compat", "0.28.0-dlc"), ("bedrock_compat", "0.29.0-dlc"), ("cluster_size", "0.29.0-dlc")],
)
def test_common_options_appear_where_the_code_adds_them(
    catalogue: DjlCatalogue, field: str, first: str
) -> None:
    having = [
        b for b in branches_from(catalogue, "0.25.0-dlc") if field in catalogue.fields_of("Properties", b)
    ]
    assert having == branches_from(catalogue, first)


def test_vllm_properties_pass_unknown_keys_through_from_032(catalogue: DjlCatalogue) -> None:
    policies = {
        b: c.extra for b in ("0.31.0-dlc", "0.32.0-dlc") if (c := catalogue.class_at("VllmRbProperties", b))
    }
    assert policies == {"0.31.0-dlc": "ignore", "0.32.0-dlc": "allow"}


def test_trtllm_reads_kv_cache_integers_from_extra_keys(catalogue: DjlCatalogue) -> None:
    extra = catalogue.extra_keys_of("TensorRtLlmProperties", "0.36.0-lmi27-dlc")
    assert extra["max_tokens"].conversion == "int"
    assert extra["free_gpu_memory_fraction"].conversion == "float"


def test_recommender_defaults_per_rolling_batch(catalogue: DjlCatalogue) -> None:
    for branch in branches_from(catalogue, "0.28.0-dlc"):
        assert catalogue.recommender_default("option.max_rolling_batch_size", "vllm", branch) == 256
        assert catalogue.recommender_default("option.max_rolling_batch_size", "trtllm", branch) == 256
        assert catalogue.recommender_default("option.mpi_mode", "trtllm", branch) == "true"
    assert catalogue.recommender_default("option.max_rolling_batch_size", "tnx", "0.33.0-dlc") == 32
    assert catalogue.recommender_default("option.mpi_mode", "lmi-dist", "0.32.0-dlc") == "true"
    assert catalogue.recommender_default("option.mpi_mode", "lmi-dist", "0.33.0-dlc") is None


def test_recommender_turns_on_async_mode_for_vllm_from_035(catalogue: DjlCatalogue) -> None:
    def async_writes(branch: str) -> list[list[str]]:
        method = catalogue.recommender_method("setRollingBatch", branch)
        assert method is not None
        return [w.when for w in method.writes if w.key == "option.async_mode" and w.value == "true"]

    assert async_writes("0.34.0-dlc") == []
    assert any(when[-1] == "isVllmEnabled(features)" for when in async_writes("0.35.0-dlc"))


def test_recommender_reads_the_top_level_batch_size(catalogue: DjlCatalogue) -> None:
    for branch in branches_from(catalogue, "0.27.0-dlc"):
        method = catalogue.recommender_method("setRollingBatch", branch)
        assert method is not None
        read = [r for r in method.reads if r.key and r.key.endswith("batch_size") and "rolling" not in r.key]
        assert [(r.key, r.default) for r in read] == [("batch_size", "1")], branch
