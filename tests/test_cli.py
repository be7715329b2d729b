"""The command line as a user meets it: exit codes, error messages, formats, selection, pragmas.

Every test runs the real entry point (``python -m lmi_config``) in a fresh interpreter through
``run_cli``; inputs are files under ``tests/fixtures/cli/`` (only file-system states such as a
missing path, an empty directory, an unreadable or binary file are made in ``tmp_path``).
"""

from __future__ import annotations

import inspect
import json
import os
import re
from pathlib import Path

import pytest
from conftest import FIXTURES, CliResult, run_cli, sarif_file

from lmi_config import __version__
from lmi_config.rules import load_rules
from lmi_config.rules.base import find_rule

CLI_FIXTURES = FIXTURES / "cli"
RULES = load_rules()
FINDING_KEYS = {"path", "line", "code", "rule", "severity", "message", "key", "fix"}
FIX_KEYS = {"description", "applicability", "path", "edits", "changes", "alternatives"}


def fixture(name: str) -> str:
    path = CLI_FIXTURES / name
    assert path.exists(), path
    return str(path)


def line_of(name: str, text: str) -> int:
    """The 1-based line of a fixture that contains ``text`` (so tests do not hard-code numbers)."""
    for number, line in enumerate((CLI_FIXTURES / name).read_text(encoding="utf-8").splitlines(), start=1):
        if text in line:
            return number
    raise AssertionError(f"{text!r} not in {name}")


def findings_of(result: CliResult) -> list[dict]:
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout)["findings"]


def assert_usage_error(result: CliResult, *mentions: str) -> None:
    """Exit 2, nothing on stdout, exactly one `lmi-config: error:` line on stderr naming the problem."""
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("lmi-config: error: "), lines[0]
    for mention in mentions:
        assert mention in lines[0], (mention, lines[0])
    assert result.stdout == ""


# --- version and help -------------------------------------------------------------------------


def test_version_prints_the_package_version() -> None:
    result = run_cli("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"lmi-config, version {__version__}"


def test_lint_help_shows_examples_and_exit_codes() -> None:
    result = run_cli("lint", "--help")
    assert result.returncode == 0
    assert "Examples:" in result.stdout
    examples = result.stdout.split("Examples:", 1)[1]
    assert "lmi-config lint serving.properties" in examples
    assert "| lmi-config lint - " in examples  # reading standard input
    assert "Exit status" in result.stdout


# --- exit codes ---------------------------------------------------------------------------------


def test_clean_file_exits_0_with_no_findings() -> None:
    result = run_cli("lint", fixture("clean.serving.properties"), "--strict", "--format", "json")
    assert result.returncode == 0, result.stdout
    assert findings_of(result) == []


def test_error_finding_exits_1() -> None:
    result = run_cli("lint", fixture("invalid-dtype.serving.properties"))
    assert result.returncode == 1
    place = f"{fixture('invalid-dtype.serving.properties')}:{line_of('invalid-dtype.serving.properties', 'option.dtype')}:"
    assert f"{place} LMI102 error [invalid-value]" in result.stdout


def test_warnings_exit_0_without_strict_and_1_with_it() -> None:
    relaxed = run_cli("lint", fixture("option-typo.serving.properties"))
    strict = run_cli("lint", fixture("option-typo.serving.properties"), "--strict")
    assert "[unknown-option]" in relaxed.stdout
    assert "error [" not in relaxed.stdout
    assert relaxed.returncode == 0
    assert strict.returncode == 1
    assert "[unknown-option]" in strict.stdout


# --- unusable input: exit 2, one line, no traceback -------------------------------------------


def test_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope" / "serving.properties"
    assert_usage_error(run_cli("lint", str(missing)), str(missing), "no such file")


def test_directory_with_nothing_to_lint_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "README.txt").write_text("no configuration here\n")
    assert_usage_error(run_cli("lint", str(tmp_path)), str(tmp_path))


def test_unreadable_file_is_a_usage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "serving.properties"
    path.write_text("option.model_id=gpt2\n")
    path.chmod(0)
    try:
        if not os.access(path, os.R_OK):
            assert_usage_error(run_cli("lint", str(path)), str(path), "permission denied")
            return
        # root reads a mode-000 file: make the read fail as it would for anyone else, in-process
        from click.testing import CliRunner

        import lmi_config.io
        from lmi_config.cli import main

        real_open = os.open

        def refuse(name: object, flags: int, *args: object) -> int:
            if str(name) == str(path):
                raise PermissionError(13, "Permission denied", str(name))
            return real_open(name, flags, *args)  # type: ignore[arg-type]

        monkeypatch.setattr(lmi_config.io.os, "open", refuse)
        # click < 8.2 mixes stderr into output unless told not to; 8.2 removed the argument
        separate = {"mix_stderr": False} if "mix_stderr" in inspect.signature(CliRunner).parameters else {}
        result = CliRunner(**separate).invoke(main, ["lint", str(path)])
        assert result.exit_code == 2
        lines = result.stderr.strip().splitlines()
        assert (
            len(lines) == 1 and lines[0].startswith("lmi-config: error: ") and "permission denied" in lines[0]
        )
        assert "Traceback" not in result.output
    finally:
        path.chmod(0o644)


def test_binary_file_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "serving.properties"
    path.write_bytes(b"\x7fELF\x02\x01\x01\x00\x00\x00option.model_id=gpt2\n")
    assert_usage_error(run_cli("lint", str(path)), str(path), "binary")


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--select", "LMI101,no-such-rule"),
        ("--backend", "tensorflow-serving"),
        ("--lmi-version", "9.99.0"),
        ("--instance", "ml.z9.mega"),
    ],
)
def test_unknown_choice_is_a_usage_error_naming_the_value(option: str, value: str) -> None:
    shown = value.split(",")[-1]
    assert_usage_error(run_cli("lint", fixture("clean.serving.properties"), option, value), repr(shown))


# --- inputs: stdin and directories --------------------------------------------------------------


def test_dash_reads_standard_input() -> None:
    text = (CLI_FIXTURES / "invalid-dtype.serving.properties").read_bytes()
    result = run_cli("lint", "-", stdin=text)
    assert result.returncode == 1
    assert f"<stdin>:{line_of('invalid-dtype.serving.properties', 'option.dtype')}: LMI102" in result.stdout


def test_directory_lints_serving_properties_and_env_as_the_pair_the_container_reads() -> None:
    result = run_cli("lint", "pair", "--format", "json", cwd=CLI_FIXTURES)
    document = json.loads(result.stdout)
    assert result.returncode == 0  # a shadowed value is a warning
    assert document["summary"]["files"] == 2
    shadowed = [finding for finding in document["findings"] if finding["rule"] == "shadowed-setting"]
    assert len(shadowed) == 1, document["findings"]
    finding = shadowed[0]
    assert finding["path"] == os.path.join("pair", ".env")
    assert finding["line"] == line_of("pair/.env", "OPTION_TENSOR_PARALLEL_DEGREE")
    assert finding["key"] == "option.tensor_parallel_degree"
    # the loser is the env value, the winner the file's (file and line named), and the message says so
    winner_line = line_of("pair/serving.properties", "option.tensor_parallel_degree")
    assert (
        f"OPTION_TENSOR_PARALLEL_DEGREE='8' is not used: option.tensor_parallel_degree='4' "
        f"(pair/serving.properties:{winner_line}) wins"
    ) in finding["message"]
    # OPTION_DTYPE sets a key the file does not: no conflict, no finding
    assert not [f for f in document["findings"] if f["key"] == "option.dtype"]


# --- output formats -----------------------------------------------------------------------------


def test_json_output_follows_the_stable_interface() -> None:
    name = "several-findings.serving.properties"
    result = run_cli("lint", fixture(name), "--format", "json")
    assert result.returncode == 1
    document = json.loads(result.stdout)
    assert set(document) == {"findings", "summary"}
    findings = document["findings"]
    assert findings
    for finding in findings:
        assert set(finding) == FINDING_KEYS
        assert finding["path"] == fixture(name)
        assert finding["line"] is None or (isinstance(finding["line"], int) and finding["line"] >= 1)
        assert finding["severity"] in ("error", "warning", "info")
        assert find_rule(finding["code"]).slug == finding["rule"]
        assert finding["message"]
        assert finding["fix"] is None or (
            set(finding["fix"]) == FIX_KEYS and finding["fix"]["applicability"] in ("safe", "unsafe")
        )
    by_code = {finding["code"]: finding for finding in findings}
    assert sorted(by_code) == ["LMI002", "LMI003", "LMI101", "LMI102"]
    assert by_code["LMI003"]["fix"]["applicability"] == "safe"  # trailing blanks: stripped by --fix
    assert by_code["LMI002"]["line"] == line_of(name, "option.tensor_parallel_degree=2")
    assert by_code["LMI003"]["line"] == line_of(name, "option.revision=main ")
    assert by_code["LMI102"]["line"] == line_of(name, "option.dtype")
    assert by_code["LMI102"]["key"] == "option.dtype"
    assert by_code["LMI101"]["line"] == line_of(name, "option.max_rolling_batch_szie")
    summary = document["summary"]
    assert summary["files"] == 1
    for severity, count_key in (("error", "errors"), ("warning", "warnings"), ("info", "infos")):
        assert summary[count_key] == sum(1 for finding in findings if finding["severity"] == severity)


# The part of the SARIF 2.1.0 schema (docs.oasis-open.org/sarif/sarif/v2.1.0) that code-scanning
# tools rely on; the full schema is not vendored and the tests do not use the network.
_SARIF_REGION = {
    "type": "object",
    "properties": {
        "startLine": {"type": "integer", "minimum": 1},
        "endLine": {"type": "integer", "minimum": 1},
        "startColumn": {"type": "integer", "minimum": 1},
        "endColumn": {"type": "integer", "minimum": 1},
    },
}
# SARIF 2.1.0 §3.55 fix, §3.56 artifactChange, §3.57 replacement
SARIF_FIX_SCHEMA = {
    "type": "object",
    "required": ["artifactChanges"],
    "properties": {
        "description": {"type": "object", "required": ["text"]},
        "artifactChanges": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["artifactLocation", "replacements"],
                "properties": {
                    "replacements": {
                        "type": "array",
                        "minItems": 1,
                        "items": {
                            "type": "object",
                            "required": ["deletedRegion"],
                            "properties": {
                                "deletedRegion": _SARIF_REGION,
                                "insertedContent": {"type": "object", "required": ["text"]},
                            },
                        },
                    }
                },
            },
        },
    },
}
SARIF_SUBSET_SCHEMA = {
    "type": "object",
    "required": ["version", "runs"],
    "properties": {
        "version": {"const": "2.1.0"},
        "runs": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["tool"],
                "properties": {
                    "tool": {
                        "type": "object",
                        "required": ["driver"],
                        "properties": {
                            "driver": {
                                "type": "object",
                                "required": ["name"],
                                "properties": {
                                    "name": {"type": "string"},
                                    "rules": {
                                        "type": "array",
                                        "items": {
                                            "type": "object",
                                            "required": ["id"],
                                            "properties": {"id": {"type": "string"}},
                                        },
                                    },
                                },
                            }
                        },
                    },
                    "results": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["message"],
                            "properties": {
                                "ruleId": {"type": "string"},
                                "ruleIndex": {"type": "integer", "minimum": 0},
                                "fixes": {"type": "array", "items": SARIF_FIX_SCHEMA},
                                "level": {"enum": ["none", "note", "warning", "error"]},
                                "message": {
                                    "type": "object",
                                    "required": ["text"],
                                    "properties": {"text": {"type": "string"}},
                                },
                                "locations": {
                                    "type": "array",
                                    "items": {
                                        "type": "object",
                                        "properties": {
                                            "physicalLocation": {
                                                "type": "object",
                                                "properties": {
                                                    "artifactLocation": {
                                                        "type": "object",
                                                        "properties": {"uri": {"type": "string"}},
                                                    },
                                                    "region": {
                                                        "type": "object",
                                                        "properties": {
                                                            "startLine": {"type": "integer", "minimum": 1}
                                                        },
                                                    },
                                                },
                                            }
                                        },
                                    },
                                },
                            },
                        },
                    },
                },
            },
        },
    },
}


def test_sarif_output_is_sarif_2_1_0_with_the_same_findings() -> None:
    name = "several-findings.serving.properties"
    sarif = run_cli("lint", fixture(name), "--format", "sarif")
    as_json = run_cli("lint", fixture(name), "--format", "json")
    assert sarif.returncode == as_json.returncode == 1
    document = json.loads(sarif.stdout)
    try:
        import jsonschema
    except ImportError:  # pragma: no cover - the structural checks below still run
        jsonschema = None
    if jsonschema is not None:
        jsonschema.validate(document, SARIF_SUBSET_SCHEMA)
    assert document["version"] == "2.1.0"
    run = document["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "lmi-config"
    rule_ids = [item["id"] for item in driver["rules"]]
    assert rule_ids == [item.code for item in RULES]
    levels = {"error": "error", "warning": "warning", "info": "note"}
    expected = [
        (f["code"], levels[f["severity"]], f["line"], f["message"])
        for f in json.loads(as_json.stdout)["findings"]
    ]
    seen = []
    for result in run["results"]:
        assert result["ruleId"] in rule_ids
        if "ruleIndex" in result:
            assert rule_ids[result["ruleIndex"]] == result["ruleId"]
        location = result["locations"][0]["physicalLocation"]
        assert str(sarif_file(run, location["artifactLocation"])) == fixture(name)
        line = location.get("region", {}).get("startLine")
        seen.append((result["ruleId"], result["level"], line, result["message"]["text"]))
    assert seen == expected


def test_github_output_is_workflow_annotations() -> None:
    name = "invalid-dtype.serving.properties"
    result = run_cli("lint", fixture(name), "--format", "github")
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert len(lines) == 1, result.stdout
    match = re.fullmatch(
        r"::error file=(?P<file>[^,]+),line=(?P<line>\d+)(,title=[^:]*)?::(?P<message>.+)", lines[0]
    )
    assert match, lines[0]
    assert match["file"] == fixture(name)
    assert int(match["line"]) == line_of(name, "option.dtype")
    assert "option.dtype" in match["message"]


# --- rule selection and pragmas -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "expected_codes"),
    [
        (("--select", "LMI101", "--select", "invalid-value"), {"LMI101", "LMI102"}),
        (("--select", "LMI0", "--ignore", "trailing-whitespace"), {"LMI002"}),
        (("--ignore", "LMI1,duplicate-key"), {"LMI003"}),
    ],
    ids=["select-code-and-slug", "select-prefix-ignore-slug", "ignore-prefix-and-slug"],
)
def test_select_and_ignore_accept_codes_slugs_and_prefixes(
    arguments: tuple[str, ...], expected_codes: set[str]
) -> None:
    # unfiltered, the fixture yields exactly LMI101, LMI102, LMI002 and LMI003 (test_json_output…)
    result = run_cli("lint", fixture("several-findings.serving.properties"), "--format", "json", *arguments)
    assert {finding["code"] for finding in findings_of(result)} == expected_codes


PRAGMA_FIXTURES = ("pragma-code.serving.properties", "pragma-slug.serving.properties")


def test_disable_pragma_by_code_or_slug_suppresses_the_finding_in_that_file() -> None:
    # the same settings as option-typo.serving.properties, which reports unknown-option
    for name in PRAGMA_FIXTURES:
        lines = (CLI_FIXTURES / name).read_text().splitlines()
        assert lines[0].startswith("# lmi-config: disable=")
        assert lines[1:] == (CLI_FIXTURES / "option-typo.serving.properties").read_text().splitlines()
    result = run_cli("lint", *(fixture(name) for name in PRAGMA_FIXTURES), "--strict", "--format", "json")
    assert result.returncode == 0, result.stdout
    assert findings_of(result) == []


# --- the rules command --------------------------------------------------------------------------


def test_rules_lists_every_rule_with_code_slug_and_severity() -> None:
    result = run_cli("rules")
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    assert len(lines) == len(RULES)
    for line, item in zip(lines, RULES, strict=True):
        assert line.split()[:3] == [item.code, item.slug, item.severity]


def test_rules_explains_one_rule_with_examples_and_source() -> None:
    result = run_cli("rules", "unknown-option")
    assert result.returncode == 0
    item = find_rule("unknown-option")
    assert result.stdout.startswith(f"{item.code} {item.slug} ({item.severity})")
    for heading in ("What it does", "Why it matters", "Use instead", "Source"):
        assert heading in result.stdout
    for line in item.bad.text.splitlines() + item.good.text.splitlines():
        assert line in result.stdout
    assert item.source in result.stdout


def test_rules_with_an_unknown_name_is_a_usage_error() -> None:
    assert_usage_error(run_cli("rules", "NOPE"), "'NOPE'")


# --- secrets ------------------------------------------------------------------------------------

HF_TOKEN_FILES = ("hf-token.env", "hf-token.serving.properties")


def _secret_values(name: str, variables: tuple[str, ...]) -> list[str]:
    values = []
    for line in (CLI_FIXTURES / name).read_text().splitlines():
        key, _, value = line.partition("=")
        if key.strip() in variables:
            values.append(value.strip())
    assert values, name
    return values


def _paths_reported_as_secret(output_format: str, output: str) -> set[str]:
    """The files for which an output of ``output_format`` carries a secret-in-config finding."""
    if output_format == "json":
        return {f["path"] for f in json.loads(output)["findings"] if f["rule"] == "secret-in-config"}
    if output_format == "sarif":
        run = json.loads(output)["runs"][0]
        return {
            str(sarif_file(run, r["locations"][0]["physicalLocation"]["artifactLocation"]))
            for r in run["results"]
            if r["ruleId"] == "LMI502"
        }
    if output_format == "github":
        return {
            m["file"]
            for m in re.finditer(
                r"^::\w+ file=(?P<file>[^,]+),.*title=LMI502 secret-in-config::", output, re.M
            )
        }
    return {
        m["file"] for m in re.finditer(r"^(?P<file>\S+?):\d+: LMI502 \w+ \[secret-in-config\]", output, re.M)
    }


@pytest.mark.parametrize("output_format", ["text", "json", "sarif", "github"])
def test_hf_token_is_reported_but_never_printed(output_format: str) -> None:
    tokens = {value for name in HF_TOKEN_FILES for value in _secret_values(name, ("HF_TOKEN",))}
    assert all(re.fullmatch(r"hf_[A-Za-z0-9]{34}", token) for token in tokens)
    result = run_cli("lint", *(fixture(name) for name in HF_TOKEN_FILES), "--format", output_format)
    assert result.returncode == 1
    assert _paths_reported_as_secret(output_format, result.stdout) == {
        fixture(name) for name in HF_TOKEN_FILES
    }
    for token in tokens:  # reported, but the token never appears, in whole or in its secret part
        assert token not in result.stdout + result.stderr
        assert token[3:] not in result.stdout + result.stderr


def test_aws_secret_key_in_serving_properties_is_never_printed() -> None:
    name = "aws-credentials.serving.properties"
    secrets = _secret_values(name, ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"))
    result = run_cli("lint", fixture(name), "--format", "json")
    reported = {finding["key"] for finding in findings_of(result) if finding["rule"] == "secret-in-config"}
    assert reported == {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"}
    for secret in secrets:
        assert secret not in result.stdout + result.stderr
