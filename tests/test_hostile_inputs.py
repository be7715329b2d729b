"""Hostile and broken inputs (issue 9): every case runs the real CLI in a fresh process with a time
limit and an address-space limit, and must end with the documented exit code, one clear message,
no traceback, and every file that existed before left as it was.

Cases that need a file the user cannot read run without CAP_DAC_OVERRIDE when the suite runs as
root (root otherwise reads a mode-000 file), so they test the same thing for every user.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import resource
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from lmi_config.io import MAX_INPUT_BYTES

MEMORY_LIMIT_BYTES = 1024 * 1024 * 1024  # address space: far above a bounded run, far below 3.5 GB
TIMEOUT_SECONDS = 60
SIZE_REFUSAL = f"more than {MAX_INPUT_BYTES} bytes"
LLAMA_CONFIG = {
    "model_type": "llama",
    "architectures": ["LlamaForCausalLM"],
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "hidden_size": 4096,
    "num_hidden_layers": 32,
    "intermediate_size": 14336,
    "vocab_size": 128256,
}


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str


def _limits(unprivileged: bool, memory_bytes: int) -> Callable[[], None]:
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
        if unprivileged and os.geteuid() == 0:
            # drop CAP_DAC_OVERRIDE (1) and CAP_DAC_READ_SEARCH (2) from the bounding set: after exec
            # root is held to the permission bits like any other user
            libc = ctypes.CDLL(None, use_errno=True)
            for capability in (1, 2):
                if libc.prctl(24, capability, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
                    raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")

    return apply


def run(
    *args: str,
    cwd: Path,
    stdin: bytes | Path | None = None,
    stdout: Path | None = None,
    unprivileged: bool = False,
    memory_bytes: int = MEMORY_LIMIT_BYTES,
    timeout: float = TIMEOUT_SECONDS,
) -> Run:
    """``python -m lmi_config ARGS`` with limits; ``stdin``/``stdout`` may name files (``/dev/zero``)."""
    stdin_file = open(stdin, "rb") if isinstance(stdin, Path) else None  # noqa: SIM115
    stdout_file = open(stdout, "wb") if stdout is not None else None  # noqa: SIM115
    try:
        completed = subprocess.run(
            [sys.executable, "-m", "lmi_config", *args],
            input=stdin if isinstance(stdin, bytes) else None,
            stdin=stdin_file
            if stdin_file is not None
            else (None if isinstance(stdin, bytes) else subprocess.DEVNULL),
            stdout=stdout_file if stdout_file is not None else subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            timeout=timeout,
            preexec_fn=_limits(unprivileged, memory_bytes),
        )
    finally:
        for handle in (stdin_file, stdout_file):
            if handle is not None:
                handle.close()
    return Run(
        completed.returncode,
        (completed.stdout or b"").decode("utf-8", "replace"),
        completed.stderr.decode("utf-8", "replace"),
    )


def snapshot(directory: Path) -> dict[str, tuple[str, int, int]]:
    """Every entry under ``directory``: (content digest or link target or kind, mode, mtime)."""
    found = {}
    for path in sorted(directory.rglob("*")):
        status = path.lstat()
        if path.is_symlink():
            content = "link:" + os.readlink(path)
        elif path.is_file() and os.access(path, os.R_OK):
            content = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            content = "special"
        found[str(path.relative_to(directory))] = (content, status.st_mode, status.st_mtime_ns)
    return found


_BEFORE: dict[Path, dict[str, tuple[str, int, int]]] = {}


@pytest.fixture
def untouched(tmp_path: Path) -> Iterator[Path]:
    """A working directory whose files, once the test calls :func:`settle`, must survive unchanged."""
    yield tmp_path
    before = _BEFORE.pop(tmp_path, None)
    if before is not None:
        after = snapshot(tmp_path)
        changed = {name for name in before if after.get(name) != before[name]}
        assert not changed, f"pre-existing files changed: {sorted(changed)}"


def settle(directory: Path) -> None:
    """Remember every file under ``directory`` as it is now: the run must not change any of them."""
    _BEFORE[directory] = snapshot(directory)


def assert_refused(result: Run, code: int, *mentions: str) -> None:
    """The documented exit code, no traceback, each mention on stderr, on short lines."""
    assert result.returncode == code, (result.returncode, result.stdout[-2000:], result.stderr[-2000:])
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout
    errors = [line for line in result.stderr.splitlines() if line.startswith("lmi-config: error:")]
    assert errors, result.stderr[-2000:]
    for mention in mentions:
        assert mention in result.stderr, (mention, result.stderr[-2000:])
    assert len(result.stderr) < 20_000, "a refusal is a few lines, never the input echoed back"


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


# --- 1. one bounded reader: FIFOs, devices, standard input ---------------------------------------


def test_lint_on_a_fifo_without_a_writer_is_refused_at_once(untouched: Path) -> None:
    fifo = untouched / "serving.properties"
    os.mkfifo(fifo)
    settle(untouched)
    assert_refused(run("lint", str(fifo), cwd=untouched, timeout=20), 2, "FIFO", "nothing is writing")


def test_lint_reads_a_fifo_that_has_a_writer(untouched: Path) -> None:
    fifo = untouched / "serving.properties"
    os.mkfifo(fifo)
    writer = subprocess.Popen(["sh", "-c", f"printf 'option.model_id=gpt2\\noption.dtyp=fp16\\n' > '{fifo}'"])
    try:
        result = run("lint", str(fifo), "--backend", "vllm", cwd=untouched, timeout=20)
    finally:
        writer.wait(timeout=20)
    assert result.returncode == 0, result.stderr
    assert "option.dtyp" in result.stdout and "did you mean option.dtype?" in result.stdout


def test_a_fifo_in_a_directory_is_skipped_with_a_note_and_never_opened(untouched: Path) -> None:
    write(
        untouched / "model" / "serving.properties", "option.model_id=gpt2\noption.max_rolling_batch_szie=8\n"
    )
    os.mkfifo(untouched / "model" / "x.env")
    settle(untouched)
    result = run("lint", "model", "--backend", "vllm", cwd=untouched, timeout=20)
    assert result.returncode == 0, result.stderr
    assert "max_rolling_batch_szie" in result.stdout
    assert "x.env: skipped: is a FIFO" in result.stdout
    assert "Traceback" not in result.stderr


def test_render_on_a_fifo_is_refused_at_once(untouched: Path) -> None:
    fifo = untouched / "spec.yaml"
    os.mkfifo(fifo)
    settle(untouched)
    assert_refused(run("render", str(fifo), cwd=untouched, timeout=20), 2, "spec.yaml", "FIFO")


@pytest.mark.parametrize(
    ("device", "command"),
    [("/dev/zero", "lint"), ("/dev/urandom", "lint"), ("/dev/zero", "render"), ("/dev/urandom", "convert")],
)
def test_endless_devices_stop_at_the_cap(untouched: Path, device: str, command: str) -> None:
    args = [command, device] + (["--to", "env"] if command == "convert" else [])
    assert_refused(run(*args, cwd=untouched, memory_bytes=512 * 1024 * 1024), 2, device, SIZE_REFUSAL)


@pytest.mark.parametrize("command", ["lint", "explain", "convert"])
def test_standard_input_from_dev_zero_stops_at_the_cap(untouched: Path, command: str) -> None:
    args = [command, "-"] + (["--to", "env"] if command == "convert" else [])
    result = run(*args, cwd=untouched, stdin=Path("/dev/zero"), memory_bytes=512 * 1024 * 1024)
    assert_refused(result, 2, "<stdin>", SIZE_REFUSAL)


def test_a_settings_file_that_never_ends_is_refused(untouched: Path) -> None:
    write(untouched / "serving.properties", "option.model_id=gpt2\n")
    os.mkfifo(untouched / "settings.toml")
    settle(untouched)
    result = run("lint", "serving.properties", "--config", "/dev/zero", cwd=untouched)
    assert_refused(result, 2, "cannot read the settings file", SIZE_REFUSAL)
    result = run("lint", "serving.properties", "--config", "settings.toml", cwd=untouched, timeout=20)
    assert_refused(result, 2, "cannot read the settings file", "FIFO")


def test_fifty_megabytes_on_standard_input_are_refused(untouched: Path) -> None:
    big = b"option.model_id=gpt2\n" * (50 * 1024 * 1024 // 21)
    result = run("lint", "-", cwd=untouched, stdin=big, memory_bytes=512 * 1024 * 1024)
    assert_refused(result, 2, "<stdin>", SIZE_REFUSAL)


def test_a_file_over_the_cap_is_refused_by_its_size(untouched: Path) -> None:
    big = write(untouched / "serving.properties", b"#" * (MAX_INPUT_BYTES + 1))
    settle(untouched)
    assert_refused(run("lint", str(big), cwd=untouched), 2, f"file is {MAX_INPUT_BYTES + 1} bytes")


# --- 2. no traceback on any input -----------------------------------------------------------------


@pytest.mark.parametrize("name", ["a" * 5000, "a/" * 3000])
def test_a_path_longer_than_the_system_allows_is_a_usage_error(untouched: Path, name: str) -> None:
    for args in (["lint", name], ["explain", name], ["convert", name, "--to", "env"], ["render", name]):
        assert_refused(run(*args, cwd=untouched), 2, "name is too long")
    click_refusal = run("render", "--model", "gpt2", "--template-dir", name, cwd=untouched)
    assert click_refusal.returncode == 2 and "does not exist" in click_refusal.stderr
    assert "Traceback" not in click_refusal.stderr


def test_a_model_id_longer_than_a_file_name_is_a_note_not_a_traceback(untouched: Path) -> None:
    write(untouched / "serving.properties", f"option.model_id={'a' * 300}\n")
    settle(untouched)
    result = run("lint", "serving.properties", "--instance", "ml.inf2.8xlarge", cwd=untouched)
    assert result.returncode in (0, 1) and "Traceback" not in result.stderr
    assert "model checks skipped" in result.stdout and "a" * 300 not in result.stdout


def test_a_model_flag_longer_than_a_file_name_is_a_usage_error(untouched: Path) -> None:
    write(untouched / "serving.properties", "option.rolling_batch=vllm\n")
    settle(untouched)
    result = run("lint", "serving.properties", "--model", "m" * 300, cwd=untouched)
    assert_refused(result, 2, "is neither a local directory, a catalog id nor a Hugging Face model id")
    assert "m" * 300 not in result.stderr


def test_a_four_megabyte_value_is_not_echoed_back(untouched: Path) -> None:
    value = "a" * (MAX_INPUT_BYTES - 100)
    write(untouched / "serving.properties", f"option.model_id={value}\n")
    settle(untouched)
    for args in (
        ["lint", "serving.properties", "--instance", "ml.inf2.8xlarge"],
        ["explain", "serving.properties"],
    ):
        result = run(*args, cwd=untouched)
        assert result.returncode in (0, 1), result.stderr[-2000:]
        assert "Traceback" not in result.stderr
        assert len(result.stdout) + len(result.stderr) < 50_000
    result = run("lint", "serving.properties", "--model", "x" * 100_000, cwd=untouched)
    assert_refused(result, 2)


def test_environment_json_nested_a_thousand_deep_is_a_parse_error(untouched: Path) -> None:
    write(untouched / "environment.json", '{"Environment": ' + "[" * 1000 + "]" * 1000 + "}")
    settle(untouched)
    result = run("lint", "environment.json", cwd=untouched)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "LMI001" in result.stdout and "nested 1001 levels deep" in result.stdout


@pytest.mark.parametrize(
    ("field", "value", "shown"),
    [
        ("num_attention_heads", 0, "not 0"),
        ("num_attention_heads", -32, "not -32"),
        ("num_attention_heads", True, "not true"),
        ("num_key_value_heads", 0, "not 0"),
        ("hidden_size", -4096, "not -4096"),
        ("num_hidden_layers", 2.5, "not 2.5"),
        ("intermediate_size", "14336", 'not "14336"'),
    ],
)
def test_model_config_sizes_must_be_positive_integers(
    untouched: Path, field: str, value: object, shown: str
) -> None:
    write(untouched / "model" / "config.json", json.dumps({**LLAMA_CONFIG, field: value}))
    write(untouched / "serving.properties", "option.rolling_batch=disable\n")
    settle(untouched)
    result = run(
        "lint", "serving.properties", "--model", "model", "--instance", "ml.inf2.8xlarge", cwd=untouched
    )
    assert_refused(result, 2, "model/config.json", f"{field} must be a positive integer", shown)


def test_model_config_nan_is_refused_naming_the_file(untouched: Path) -> None:
    text = json.dumps(LLAMA_CONFIG)[:-1] + ', "num_attention_heads": NaN}'
    write(untouched / "model" / "config.json", text)
    write(untouched / "serving.properties", "option.rolling_batch=disable\n")
    settle(untouched)
    result = run(
        "lint", "serving.properties", "--model", "model", "--instance", "ml.inf2.8xlarge", cwd=untouched
    )
    assert_refused(result, 2, "model/config.json", "num_attention_heads must be a positive integer, not NaN")
    assert "cannot convert float NaN" not in result.stderr


def test_model_config_nested_five_thousand_deep_is_refused(untouched: Path) -> None:
    write(untouched / "model" / "config.json", '{"a":' * 5000 + "1" + "}" * 5000)
    write(untouched / "serving.properties", "option.rolling_batch=disable\n")
    settle(untouched)
    result = run("lint", "serving.properties", "--model", "model", cwd=untouched)
    assert_refused(result, 2, "model/config.json", "nested 5000 levels deep")


def test_yaml_spec_nested_a_hundred_thousand_deep_is_refused(untouched: Path) -> None:
    write(untouched / "spec.yaml", "model: gpt2\noptions:\n  x: " + "[" * 100_000 + "]" * 100_000 + "\n")
    settle(untouched)
    assert_refused(run("render", "spec.yaml", cwd=untouched), 2, "spec.yaml:3", "nested more than")


def test_yaml_billion_laughs_is_refused_before_it_expands(untouched: Path) -> None:
    lines = [
        "model: gpt2",
        "instance: ml.inf2.8xlarge",
        "options:",
        '  a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
    ]
    for previous, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"  {name}: &{name} [" + ",".join([f"*{previous}"] * 9) + "]")
    write(untouched / "spec.yaml", "\n".join(lines) + "\n")
    settle(untouched)
    result = run("render", "spec.yaml", cwd=untouched, memory_bytes=512 * 1024 * 1024, timeout=30)
    assert_refused(result, 2, "spec.yaml", "YAML aliases")


def test_an_integer_of_five_thousand_digits_in_a_spec_is_refused(untouched: Path) -> None:
    write(untouched / "spec.yaml", f"model: gpt2\noptions:\n  max_rolling_batch_size: {'9' * 5000}\n")
    settle(untouched)
    assert_refused(run("render", "spec.yaml", cwd=untouched), 2, "spec.yaml")


def test_output_into_a_missing_directory_is_refused(untouched: Path) -> None:
    result = run("render", "--model", "gpt2", "-o", "missing/serving.properties", cwd=untouched)
    assert_refused(result, 2, "missing/serving.properties", "does not exist")
    assert not (untouched / "missing").exists()


def test_output_into_a_read_only_directory_is_refused(untouched: Path) -> None:
    read_only = untouched / "read-only"
    write(read_only / "serving.properties", "option.model_id=kept\n")
    settle(untouched)
    read_only.chmod(0o555)
    try:
        result = run(
            "render", "--model", "gpt2", "-o", "read-only/new.properties", cwd=untouched, unprivileged=True
        )
        assert_refused(result, 2, "read-only", "not writable")
    finally:
        read_only.chmod(0o755)


@pytest.mark.parametrize(
    ("template", "mention"),
    [
        ("{% for x in %}", "template error"),
        ("{{ undefined_thing.x }}", "undefined"),
        ("{% if x %}" * 3000 + "{% endif %}" * 3000, "nested too deeply"),
        (
            "{% for a in range(100000) %}{% for b in range(100000) %}xxxxxxxx{% endfor %}{% endfor %}",
            "writes more than",
        ),
    ],
)
def test_broken_templates_are_refused(untouched: Path, template: str, mention: str) -> None:
    write(untouched / "templates" / "serving.properties.j2", template)
    write(untouched / "serving.properties", "option.model_id=previous\n")
    settle(untouched)
    result = run(
        "render", "--model", "gpt2", "--template-dir", "templates", "-o", "serving.properties", cwd=untouched
    )
    assert_refused(result, 2, "serving.properties.j2", mention)


def test_standard_output_on_a_full_disk_is_one_line_and_exit_2(untouched: Path) -> None:
    write(untouched / "serving.properties", "option.model_id=gpt2\n")
    settle(untouched)
    for args in (["lint", "serving.properties"], ["rules"], ["render", "--model", "gpt2"]):
        result = run(*args, cwd=untouched, stdout=Path("/dev/full"))
        assert_refused(result, 2, "No space left on device")


def test_a_closed_pipe_on_standard_output_is_one_line_and_exit_2(untouched: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "lmi_config", "rules"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=untouched,
        preexec_fn=_limits(False, MEMORY_LIMIT_BYTES),
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # the reader is gone before anything is written (`| head -0`)
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=TIMEOUT_SECONDS) == 2
    assert "Traceback" not in stderr and "Exception ignored" not in stderr
    assert "Broken pipe" in stderr


# --- 3. convert never drops silently ----------------------------------------------------------


def test_convert_reports_an_unmatched_quote_and_reads_the_next_lines(untouched: Path) -> None:
    write(untouched / "model.env", 'OPTION_DTYPE="fp16\nOPTION_TENSOR_PARALLEL_DEGREE=2\nHF_MODEL_ID=gpt2\n')
    settle(untouched)
    result = run("convert", "model.env", "--to", "properties", cwd=untouched)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "model.env:1: OPTION_DTYPE: unterminated double quote" in result.stderr
    assert "option.tensor_parallel_degree=2" in result.stdout and "option.model_id=gpt2" in result.stdout


def test_convert_reports_a_malformed_unicode_escape_with_its_line(untouched: Path) -> None:
    write(
        untouched / "serving.properties",
        "option.model_id=gpt2\noption.dtype=\\u00zz\noption.tensor_parallel_degree=2\n",
    )
    settle(untouched)
    result = run("convert", "serving.properties", "--to", "env", cwd=untouched)
    assert result.returncode == 1
    assert "serving.properties:2: malformed \\uXXXX escape" in result.stderr
    assert "OPTION_TENSOR_PARALLEL_DEGREE=2" in result.stdout


@pytest.mark.parametrize(("document", "kind"), [("[1, 2]", "array"), ("42", "number"), ("null", "null")])
def test_convert_reports_json_that_is_not_an_object(untouched: Path, document: str, kind: str) -> None:
    write(untouched / "environment.json", document)
    settle(untouched)
    result = run("convert", "environment.json", "--to", "env", cwd=untouched)
    assert result.returncode == 1
    assert f"not a JSON {kind}" in result.stderr and "not converted" in result.stderr


def test_convert_reports_every_value_that_is_not_a_string(untouched: Path) -> None:
    document = '{\n"HF_MODEL_ID": "gpt2",\n"OPTION_A": null,\n"OPTION_B": [1],\n"OPTION_C": {"x": 1},\n"OPTION_D": 5\n}'
    write(untouched / "environment.json", document)
    settle(untouched)
    result = run("convert", "environment.json", "--to", "env", cwd=untouched)
    assert result.returncode == 1
    for line, name, kind in ((3, "OPTION_A", "null"), (4, "OPTION_B", "array"), (5, "OPTION_C", "object")):
        assert (
            f"environment.json:{line}: value of '{name}' must be a string, not a JSON {kind}" in result.stderr
        )
    assert "OPTION_D=5" in result.stdout and "HF_MODEL_ID=gpt2" in result.stdout


def test_convert_reports_variables_the_container_does_not_read(untouched: Path) -> None:
    write(untouched / "model.env", "HF_MODEL_ID=gpt2\nOPTION_DTYPE=\noption.rolling_batch=vllm\n")
    settle(untouched)
    result = run("convert", "model.env", "--to", "properties", cwd=untouched)
    assert result.returncode == 1
    assert "model.env:2: OPTION_DTYPE is empty" in result.stderr
    assert "model.env:3: option.rolling_batch is a serving.properties key" in result.stderr


# --- 4. a directory run reports every file -----------------------------------------------------


def test_a_directory_with_broken_files_reports_them_and_the_findings_of_the_others(untouched: Path) -> None:
    write(
        untouched / "good" / "serving.properties", "option.model_id=gpt2\noption.max_rolling_batch_szie=8\n"
    )
    (untouched / "dangling").mkdir()
    (untouched / "dangling" / "serving.properties").symlink_to(untouched / "nowhere.properties")
    (untouched / "loop").mkdir()
    (untouched / "loop" / "loop.env").symlink_to("loop.env")
    write(untouched / "binary" / "model.properties", b"a=1\n\x00\x01\x02")
    (untouched / "linked").symlink_to(untouched / "good")
    settle(untouched)
    result = run("lint", ".", "--backend", "vllm", cwd=untouched)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "max_rolling_batch_szie" in result.stdout and "did you mean" in result.stdout
    assert "dangling/serving.properties: is a symlink to" in result.stderr
    assert "loop/loop.env: is a symlink loop" in result.stderr
    assert "binary/model.properties:2: binary file" in result.stderr
    assert "linked: skipped: a symlink to a directory is not followed" in result.stdout
    document = json.loads(run("lint", ".", "--backend", "vllm", "--format", "json", cwd=untouched).stdout)
    assert len(document["summary"]["unreadable"]) == 3


def test_unreadable_files_and_directories_are_reported(untouched: Path) -> None:
    write(untouched / "good" / "serving.properties", "option.model_id=gpt2\noption.dtyp=fp16\n")
    locked_file = write(untouched / "locked" / "model.env", "HF_MODEL_ID=gpt2\n")
    locked_directory = untouched / "hidden"
    write(locked_directory / "serving.properties", "option.model_id=gpt2\n")
    locked_file.chmod(0o000)
    locked_directory.chmod(0o000)
    try:
        result = run("lint", ".", "--backend", "vllm", cwd=untouched, unprivileged=True)
    finally:
        locked_file.chmod(0o644)
        locked_directory.chmod(0o755)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "option.dtyp" in result.stdout
    assert "locked/model.env: permission denied" in result.stderr
    assert "hidden: cannot read the directory (permission denied)" in result.stderr


# --- 5. templates are sandboxed ----------------------------------------------------------------


def test_a_template_cannot_run_commands(untouched: Path) -> None:
    marker = untouched / "pwned"
    attack = "{{ cycler.__init__.__globals__.os.popen('touch " + str(marker) + "').read() }}"
    write(untouched / "templates" / "serving.properties.j2", attack)
    settle(untouched)
    result = run("render", "--model", "gpt2", "--template-dir", "templates", cwd=untouched)
    assert_refused(result, 2, "serving.properties.j2", "refused by the sandbox")
    assert not marker.exists()


# --- 6. output that cannot hijack a terminal -----------------------------------------------------


@pytest.mark.parametrize("output_format", ["text", "github"])
def test_terminal_escapes_in_keys_are_shown_escaped(untouched: Path, output_format: str) -> None:
    write(untouched / "serving.properties", b"option.model_id=gpt2\noption.\x1b]0;PWNED\x07x=1\xe2\x80\xae\n")
    settle(untouched)
    result = run("lint", "serving.properties", "--format", output_format, cwd=untouched)
    assert result.returncode == 0, result.stderr
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout
    assert "\\x1b]0;PWNED\\x07x" in result.stdout


def test_a_file_name_with_an_escape_is_shown_escaped_in_errors(untouched: Path) -> None:
    result = run("lint", "missing\x1b[2J.properties", cwd=untouched)
    assert_refused(result, 2, "missing\\x1b[2J.properties")
    assert "\x1b" not in result.stderr


def test_a_nul_byte_anywhere_is_refused_with_its_line(untouched: Path) -> None:
    text = b"option.model_id=gpt2\n# " + b"x" * 9000 + b"\noption.dtype=fp\x0016\n"
    write(untouched / "serving.properties", text)
    settle(untouched)
    assert_refused(run("lint", "serving.properties", cwd=untouched), 2, "serving.properties:3: binary file")
    assert_refused(run("convert", "serving.properties", "--to", "env", cwd=untouched), 2, "binary file")


# --- 7-10. model configs, linear time, secrets by name, shell expansions ---------------------------


def test_thirty_thousand_unknown_keys_lint_quickly_with_collapsed_output(untouched: Path) -> None:
    text = "".join(f"option.unknown_key_{index}=1\n" for index in range(30_000))
    write(untouched / "serving.properties", text)
    settle(untouched)
    result = run("lint", "serving.properties", "--backend", "vllm", cwd=untouched, timeout=45)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "… and 29980 more [unknown-option] findings in this file not shown" in result.stdout
    assert len(result.stdout) < 20_000
    everything = run(
        "lint", "serving.properties", "--backend", "vllm", "--max-findings", "0", cwd=untouched, timeout=45
    )
    assert everything.stdout.count(": LMI101 warning [unknown-option]") == 30_000


@pytest.mark.parametrize(
    "text",
    [
        "option.model_id=gpt2\noption.hf_token=hf_SECRETabc\n",
        "option.model_id=gpt2\noption.use_auth_token=SECRETabc\n",
        "HF_MODEL_ID=gpt2\nMY_API_TOKEN=SECRETabc\n",
        "HF_MODEL_ID=gpt2\nDB_PASSWORD=SECRETabc\n",
        "HF_MODEL_ID=gpt2\nCLIENT_SECRET_VALUE=SECRETabc\n",
    ],
)
def test_values_under_secret_named_keys_are_flagged_and_never_printed(untouched: Path, text: str) -> None:
    name = "model.env" if text.startswith("HF_") else "serving.properties"
    write(untouched / name, text)
    settle(untouched)
    lint = run("lint", name, "--format", "json", cwd=untouched)
    assert "LMI502" in lint.stdout and "SECRETabc" not in lint.stdout + lint.stderr
    converted = run("convert", name, "--to", "env", cwd=untouched)
    assert converted.returncode == 1 and "credentials are never written" in converted.stderr
    assert "SECRETabc" not in converted.stdout + converted.stderr


def test_explain_and_every_convert_target_mask_a_secret_named_option(untouched: Path) -> None:
    write(untouched / "serving.properties", "option.model_id=gpt2\noption.hf_token=abc\n")
    settle(untouched)
    explain = run("explain", "serving.properties", cwd=untouched)
    assert explain.returncode in (0, 1) and "option.hf_token" in explain.stdout
    assert "= abc" not in explain.stdout and "redacted" in explain.stdout
    for target in ("properties", "json"):
        converted = run("convert", "serving.properties", "--to", target, cwd=untouched)
        assert converted.returncode == 1 and "option.hf_token not copied" in converted.stderr
        assert "abc" not in converted.stdout


def test_render_refuses_a_secret_named_option_whatever_it_looks_like(untouched: Path) -> None:
    result = run("render", "--model", "gpt2", "--set", "hf_token=hf_SECRETabc", cwd=untouched)
    assert_refused(result, 2, "option.hf_token holds a credential")
    assert "hf_SECRETabc" not in result.stdout + result.stderr
    result = run(
        "render", "--model", "gpt2", "--env", "MY_API_TOKEN=abcdef", "--format", "env", cwd=untouched
    )
    assert_refused(result, 2, "MY_API_TOKEN holds a credential")


def test_shell_expansions_in_env_files_are_flagged(untouched: Path) -> None:
    write(
        untouched / "model.env",
        "HF_MODEL_ID=gpt2\nOPTION_TENSOR_PARALLEL_DEGREE=$TP\nOPTION_GPU_MEMORY_UTILIZATION=${X:-0.9}\n",
    )
    settle(untouched)
    result = run("lint", "model.env", cwd=untouched)
    assert result.returncode == 0 and result.stdout.count("LMI008") == 2
    assert "model.env:3: LMI008 warning [shell-expansion]" in result.stdout and "'0.9'" in result.stdout


# --- output destinations ----------------------------------------------------------------------


def test_dash_output_is_standard_output_not_a_file_named_dash(untouched: Path) -> None:
    result = run("render", "--model", "gpt2", "-o", "-", cwd=untouched)
    assert result.returncode == 0 and "option.model_id=gpt2" in result.stdout
    assert not (untouched / "-").exists()


def test_render_never_writes_a_file_lint_would_refuse_for_its_size(untouched: Path) -> None:
    # 2.2 M quotes: 2.2 MB of spec, 4.4 MB once escaped as \" in the Environment JSON
    # (serving.properties refuses a non-ASCII value outright: tests/test_output_escaping.py)
    write(
        untouched / "spec.yaml",
        "model: gpt2\nformat: json\noptions:\n  chat_template: '" + '"' * 2_200_000 + "'\n",
    )
    write(untouched / "serving.properties", "option.model_id=previous\n")
    settle(untouched)
    result = run("render", "spec.yaml", "-o", "serving.properties", "--force", cwd=untouched)
    assert_refused(result, 2, f"lmi-config reads at most {MAX_INPUT_BYTES} bytes")


def test_failed_runs_leave_no_temporary_files(untouched: Path) -> None:
    write(untouched / "templates" / "serving.properties.j2", "{% for x in %}")
    settle(untouched)
    run("render", "--model", "gpt2", "--template-dir", "templates", "-o", "out.properties", cwd=untouched)
    assert sorted(path.name for path in untouched.iterdir()) == ["templates"]


def test_a_long_model_path_ending_like_a_quantized_copy_is_linted_at_once(untouched: Path) -> None:
    # the identity look-up strips quantization suffixes (-awq, -gptq …) from a model name: a 240 kB S3
    # prefix made of them must not turn that into a quadratic scan (it took minutes before the look-up
    # was limited to Hub ids)
    write(
        untouched / "serving.properties",
        "option.rolling_batch=vllm\noption.model_id=s3://b/" + "-awq" * 60000 + "x\n",
    )
    result = run("lint", "serving.properties", "--instance", "ml.g5.xlarge", cwd=untouched, timeout=20)
    assert result.returncode in (0, 1) and "Traceback" not in result.stderr
