"""The Python API raises only what it documents (issue 33): every public function of
:mod:`lmi_config.api`, found by enumerating the module (a new function is covered without editing
this file), called with hostile values — NaN, infinities, -1, 0, huge integers, booleans for
numbers, empty strings, strings with NUL or a newline, wrong types, unknown names, requests and
options with one such field — lets no exception escape but those of :mod:`lmi_config.errors`.

Offline and in a scratch directory: the models are catalog ids, every path is relative, and a
search is always a dry run (``dry_run`` is held at True: a real one would start exports).
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import os
import shutil
import sys
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from lmi_config import api
from lmi_config.errors import InputError, InvalidArgument, LmiConfigError, PlanningError, SpecError

# what needs AWS (credentials, a region, a live endpoint or bucket) or the SageMaker SDK: deploy and
# delete call SageMaker, the search jobs call SageMaker and S3, refresh_images reads the installed
# SageMaker SDK into an override file, and the job package upload builds the wheel the jobs install
NEEDS_AWS = {
    "deploy",
    "deploy_spec",
    "delete_endpoint",
    "run_search_jobs",
    "stop_search_jobs",
    "refresh_images",
    "search_job_package_upload",
}
PUBLIC = sorted(
    name
    for name, value in vars(api).items()
    if inspect.isfunction(value)
    and not name.startswith("_")
    and (value.__module__ == api.__name__ or name in api.__all__)
)
CALLED = [name for name in PUBLIC if name not in NEEDS_AWS]
# 25 calls per function: a few seconds for the file; LMI_CONFIG_FUZZ_EXAMPLES=1000 for a longer hunt
EXAMPLES = int(os.environ.get("LMI_CONFIG_FUZZ_EXAMPLES", "25"))

MODEL = "Qwen/Qwen2.5-7B-Instruct"  # in the built-in catalog, not gated
NEURON_MODEL = "mistralai/Mistral-7B-Instruct-v0.2"
SAMPLE = ROOT / "samples" / "lint" / "qwen2.5-7b-vllm-g5" / "serving.properties"


class Unprintable:
    """An object whose repr fails: a message about it must not be a second error."""

    def __repr__(self) -> str:
        raise RuntimeError("no repr")


HOSTILE: list[Any] = [
    math.nan,
    math.inf,
    -math.inf,
    -1,
    0,
    1.5,
    -0.0,
    2**63,
    10**400,
    True,
    False,
    None,
    "",
    " ",
    "\x00",
    "a\x00b",
    "a\nb",
    "unknown-name",
    "x" * 5000,
    "é\u202e",
    "-",
    b"bytes",
    b"\xff\xfe",
    [],
    ["\x00"],
    [1],
    [None],
    ("unknown-name",),
    {},
    {"unknown-name": 1},
    {"input_tokens": math.nan},
    object(),
    Unprintable(),
    Path("\x00"),
    Path("unknown-name"),
]


# values of the type an argument takes, hostile in what they hold (picked by its annotation, so that a
# call gets past a type check to what the function does with them); no URL: nothing goes online
TEXTS = ["", " ", "\x00", "a\nb", "unknown-name", "x" * 5000, "é\u202e", "-", "0", "nan", "ML.INF2", "a/b"]
TYPED: dict[str, list[Any]] = {
    "str": TEXTS,
    "int": [-1, 0, 2**31, 2**63, 10**400, True],
    "float": [math.nan, math.inf, -math.inf, -1.0, 0.0, 1e-320, 1e308, 10**400],
    "bool": [0, 1, "yes", None],
    "bytes": [b"", b"\xff\xfe\x00", b"option.model_id=\n" * 3, b"\x00" * 64],
    "list[str]": [[], [""], ["\x00"], ["unknown-name"], ["-", "-"], ["x" * 5000], ("a", 1)],
    "tuple[str, ...]": [(), ("",), ("unknown-name",), ("x" * 5000,), ["ml.inf2.8xlarge"]],
    "Path": [Path("x" * 5000), Path("unknown-name"), Path("a\nb"), Path("serving.properties")],
    "dict": [{"input_tokens": 0}, {"request_rate": 1e-320}, {"concurrency": 2**63}, {"output_tokens": True}],
}


def typed_hostile(annotation: object) -> list[Any]:
    """The hostile values of the types an annotation (a string: ``from __future__ import annotations``) names."""
    text = str(annotation)
    found: list[Any] = []
    for name, values in TYPED.items():
        alternatives = [part.strip() for part in text.split("|")]
        if any(part == name or part.startswith(name + "[") and name == "dict" for part in alternatives):
            found.extend(values)
    return found


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A scratch directory, the current one while the module runs: every path given is relative to it."""
    directory = tmp_path_factory.mktemp("api")
    shutil.copy(SAMPLE, directory / "serving.properties")
    (directory / "pages").mkdir()
    cwd = os.getcwd()
    os.chdir(directory)
    try:
        yield directory
    finally:
        os.chdir(cwd)


@pytest.fixture(scope="module")
def valid(workspace: Path) -> dict[str, dict[str, Callable[[], Any]]]:
    """Per function, a usable value for each argument (a function making it: lists are fresh)."""
    from lmi_config.configfile.loader import LintTarget, parse_source
    from lmi_config.lint import LintOptions
    from lmi_config.plan import PlanRequest
    from lmi_config.search.sagemaker_jobs import RemoteRequest
    from lmi_config.search.session import SearchOptions
    from lmi_config.spec import Spec

    lint_result = api.lint_text("option.model_id=x\n")
    plan_result = api.plan(model=NEURON_MODEL, instances=("ml.inf2.8xlarge",))
    api.write_baseline(lint_result, "baseline.json")
    search_options = SearchOptions(
        model=NEURON_MODEL,
        instance="inf2.8xlarge",
        cores=2,
        cores_per_device=2,
        dry_run=True,
        python=sys.executable,
        work_dir=".",
    )
    remote = RemoteRequest(
        SearchOptions(model=MODEL, instance="trn1.32xlarge"),
        ("trn1.32xlarge",),
        role="arn:aws:iam::123456789012:role/search",
        s3_prefix="s3://bucket/prefix",
        region="us-east-1",
        image="123456789012.dkr.ecr.us-east-1.amazonaws.com/search:1",
    )
    paths = lambda: ["serving.properties"]  # noqa: E731
    common: dict[str, Callable[[], Any]] = {
        "paths": paths,
        "path": lambda: "serving.properties",
        "options": lambda: None,
        "env_files": lambda: None,
        "stdin_bytes": lambda: None,
        "report": lambda: None,
        "region": lambda: None,
        "endpoint_url": lambda: None,
    }
    table: dict[str, dict[str, Callable[[], Any]]] = {
        "lint_options": {"isolated": lambda: True},
        "lint_text": {"text": lambda: "option.model_id=x\n", "kind": lambda: "properties"},
        "load_rules_checked": {"options": LintOptions},
        "lint_targets": {
            "targets": lambda: [LintTarget([parse_source("t", b"option.model_id=x\n", None, "properties")])]
        },
        "lint_paths": {"exclude": lambda: True},
        "fix_paths": {"write": lambda: False, "unsafe": lambda: False},
        "write_rule_pages": {"output_dir": lambda: "pages", "rules": lambda: None},
        "write_baseline": {
            "result": lambda: api.lint_text("option.model_id=x\n"),
            "path": lambda: "baseline.json",
        },
        "apply_baseline": {
            "result": lambda: api.lint_text("option.model_id=x\n"),
            "path": lambda: "baseline.json",
        },
        "explain_paths": {"workload": lambda: None},
        "render": {
            "spec": lambda: Spec(model=MODEL, instance="ml.g5.2xlarge"),
            "name": lambda: "spec",
            "output_format": lambda: None,
            "template_dir": lambda: None,
            "hub": lambda: False,
        },
        "convert_path": {"to": lambda: "json", "keep_credentials": lambda: False},
        "images": {"framework": lambda: None},
        "plan": {"request": lambda: PlanRequest(model=NEURON_MODEL, instances=("ml.inf2.8xlarge",))},
        "plan_specs": {"result": lambda: plan_result, "limit": lambda: 2},
        "plan_cache_config": {
            "result": lambda: plan_result,
            "path": lambda: "cache.json",
            "cache_format": lambda: "current",
        },
        "write_plan_cache_config": {
            "result": lambda: plan_result,
            "path": lambda: "cache.json",
            "cache_format": lambda: "current",
        },
        "search": {"options": lambda: search_options},
        "search_shard": {
            "options": lambda: search_options,
            "shard": lambda: "1/2",
            "results": lambda: "results",
        },
        "merge_search_results": {"results": lambda: "results", "output": lambda: None, "model": lambda: None},
        "plan_search_jobs": {"request": lambda: remote},
    }
    return {name: {**common, **table.get(name, {})} for name in CALLED}


# the keyword fields a function takes besides its parameters (``**fields``), each tried hostile
FIELDS = {
    "plan": (
        "model",
        "instances",
        "top",
        "objective",
        "price_kind",
        "input_tokens",
        "request_rate",
        "min_batch_size",
    ),
    "search": (
        "model",
        "strategy",
        "cores",
        "objective",
        "input_tokens",
        "python",
        "export_timeout",
        "work_dir",
    ),
    "lint_options": ("backend", "instance", "model", "hub", "lnc", "lmi_version"),
}
FIELD_BASE = {  # what else is given with them, so that a hostile field is what a call stumbles on
    "plan": {"model": NEURON_MODEL, "instances": ("ml.inf2.8xlarge",)},
    "search": {
        "model": NEURON_MODEL,
        "instance": "inf2.8xlarge",
        "cores": 2,
        "cores_per_device": 2,
        "python": sys.executable,
        "work_dir": ".",
    },
}
FIXED = {("search", "dry_run"): True}


def _field_types() -> dict[str, str]:
    """The annotation of each keyword field (PlanRequest's, PlanWorkload's, SearchOptions', LintOptions')."""
    from lmi_config.lint import LintOptions
    from lmi_config.plan import PlanRequest, PlanWorkload
    from lmi_config.search.session import SearchOptions

    return {
        field.name: str(field.type)
        for kind in (LintOptions, SearchOptions, PlanWorkload, PlanRequest)
        for field in dataclasses.fields(kind)
    }


FIELD_TYPES = _field_types()  # never a real search: it would start exports


def _hostile_variants(value: Any) -> list[Any]:
    """A request or options object with one field replaced by a hostile value (those a dataclass takes)."""
    if not dataclasses.is_dataclass(value) or isinstance(value, type):
        return []
    if not type(value).__name__.endswith(("Request", "Options")):
        return []
    variants = []
    for field in dataclasses.fields(value):
        if field.name == "dry_run":
            continue  # held at True: a falsy value would start a real search where it is not checked
        for hostile in (math.nan, -1, "unknown-name", "\x00", None, True, [1]):
            try:
                variants.append(dataclasses.replace(value, **{field.name: hostile}))
            except LmiConfigError:
                continue  # refused where it is made: also documented
            except Exception:  # noqa: BLE001 - a constructor's own type errors are not the API's
                continue
    return variants


def _call(function: Callable[..., Any], arguments: dict[str, Any]) -> BaseException | None:
    try:
        function(**arguments)
    except LmiConfigError as error:
        event(f"raised {type(error).__name__}")  # --hypothesis-show-statistics: how calls end
        return None
    except Exception as error:  # noqa: BLE001 - what the test is for
        return error
    event("returned")
    return None


def _describe(arguments: dict[str, Any]) -> str:
    def shown(value: Any) -> str:
        try:
            text = repr(value)
        except Exception:  # noqa: BLE001
            text = f"<{type(value).__name__}>"
        return text[:120]

    return ", ".join(f"{key}={shown(value)}" for key, value in arguments.items())


@pytest.mark.parametrize("name", CALLED)
def test_every_public_function_raises_only_documented_errors(name: str, valid: dict[str, Any]) -> None:
    function = getattr(api, name)
    signature = inspect.signature(function)
    parameters = [
        parameter.name
        for parameter in signature.parameters.values()
        if parameter.kind not in (parameter.VAR_KEYWORD, parameter.VAR_POSITIONAL)
    ]
    takes_fields = any(parameter.kind == parameter.VAR_KEYWORD for parameter in signature.parameters.values())
    usable = valid[name]
    missing = [
        parameter
        for parameter in parameters
        if parameter not in usable and signature.parameters[parameter].default is inspect.Parameter.empty
    ]
    assert not missing, f"{name}: give this test a usable value for {missing}"
    candidates = {
        parameter: HOSTILE
        + typed_hostile(signature.parameters[parameter].annotation) * 2
        + _hostile_variants(usable[parameter]())
        for parameter in parameters
        if parameter in usable
    }

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize="LMI_CONFIG_FUZZ_EXAMPLES" not in os.environ,  # a longer hunt explores anew
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(data=st.data())
    def check(data: st.DataObject) -> None:
        chosen = [parameter for parameter in parameters if parameter in usable]
        hostile_fields = FIELDS.get(name, ()) if takes_fields else ()
        names = chosen + [f"**{field}" for field in hostile_fields] + (["**unknown"] if takes_fields else [])
        targets = data.draw(st.sets(st.sampled_from(names), min_size=1, max_size=2), label="hostile")
        arguments: dict[str, Any] = {}
        for parameter in chosen:
            if (name, parameter) in FIXED:
                arguments[parameter] = FIXED[(name, parameter)]
            elif parameter in targets:
                arguments[parameter] = _draw(data, candidates[parameter], parameter)
            else:
                arguments[parameter] = usable[parameter]()
        if takes_fields and any(target.startswith("**") for target in targets):
            for parameter in ("request", "options"):
                arguments.pop(parameter, None)  # fields are read only without a request
            arguments.update(FIELD_BASE.get(name, {}))
            for target in targets:
                if target == "**unknown":
                    arguments["unknown_field"] = 1
                elif target.startswith("**"):
                    field_values = HOSTILE + typed_hostile(FIELD_TYPES.get(target[2:], "")) * 2
                    arguments[target[2:]] = _draw(data, field_values, target)
            for (function_name, field), value in FIXED.items():
                if function_name == name:
                    arguments[field] = value
        error = _call(function, arguments)
        if error is not None:
            shown = "".join(traceback.format_exception(error)[-6:])
            pytest.fail(f"{name}({_describe(arguments)}) raised {type(error).__name__}:\n{shown}")

    check()


def _draw(data: st.DataObject, values: list[Any], label: str) -> Any:
    """One of ``values``, drawn by its index: Hypothesis (6.100) prints each draw with repr, and a
    value whose repr raises (Unprintable) is one of the hostile ones."""
    return values[data.draw(st.integers(min_value=0, max_value=len(values) - 1), label=label)]


def test_every_public_function_is_called_or_named_as_needing_aws() -> None:
    assert set(CALLED) | NEEDS_AWS == set(PUBLIC)
    assert set(PUBLIC) >= NEEDS_AWS, "a function named here is no longer public"
    assert len(CALLED) >= 20


def test_the_errors_share_one_base_and_keep_their_old_bases() -> None:
    from lmi_config import errors

    documented = [
        value for value in vars(errors).values() if isinstance(value, type) and issubclass(value, Exception)
    ]
    assert all(issubclass(kind, LmiConfigError) for kind in documented)
    assert issubclass(SpecError, ValueError) and issubclass(PlanningError, ValueError)
    assert issubclass(InvalidArgument, InputError) and issubclass(InvalidArgument, ValueError)


def test_an_unknown_price_kind_or_convert_format_names_what_is_allowed(workspace: Path) -> None:
    with pytest.raises(InvalidArgument, match="sagemaker, ec2"):
        api.plan(model=NEURON_MODEL, instances=("ml.inf2.8xlarge",), price_kind="spot")
    with pytest.raises(InvalidArgument, match="properties, env, json"):
        api.convert_path("serving.properties", "yaml")


def test_a_nan_workload_is_refused_not_predicted(workspace: Path) -> None:
    for field in (
        "input_tokens",
        "output_tokens",
        "concurrency",
        "request_rate",
        "max_ttft_ms",
        "max_model_len",
    ):
        with pytest.raises(InputError, match=field.replace("_", "-")):
            api.plan(model=NEURON_MODEL, instances=("ml.inf2.8xlarge",), **{field: math.nan})
        with pytest.raises(InputError):
            api.explain_paths(["serving.properties"], workload={field: math.nan})


def test_the_functions_that_call_aws_check_their_arguments_before_any_call(workspace: Path) -> None:
    from lmi_config.deploy import DeployRequest
    from lmi_config.spec import Spec

    spec = Spec(model=MODEL, instance="ml.g5.2xlarge")
    refused: list[Callable[[], Any]] = [
        lambda: api.deploy("spec.yaml", DeployRequest(), dry_run=True),  # type: ignore[arg-type]
        lambda: api.deploy(spec, DeployRequest(instance_count=math.nan), dry_run=True),  # type: ignore[arg-type]
        lambda: api.deploy(spec, DeployRequest(delivery="ftp"), dry_run=True),
        lambda: api.deploy(spec, DeployRequest(), dry_run=1),  # type: ignore[arg-type]
        lambda: api.delete_endpoint(123),  # type: ignore[arg-type]
        lambda: api.delete_endpoint("qwen", show="print"),  # type: ignore[arg-type]
        lambda: api.refresh_images(output=b"images.json"),  # type: ignore[arg-type]
        lambda: api.run_search_jobs(None, confirm=lambda jobs: True),  # type: ignore[arg-type]
        lambda: api.stop_search_jobs("jobs"),  # type: ignore[arg-type]
        lambda: api.search_job_package_upload({}),  # type: ignore[arg-type]
    ]
    for call in refused:
        with pytest.raises(InvalidArgument):
            call()
