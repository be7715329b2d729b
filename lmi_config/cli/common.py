"""What the commands share: the group, the target options, the spec options, reading stdin and
writing output.

Exit codes (a stable interface): 0 no error-level findings, 1 error-level findings (or warnings
with ``--strict``; nothing fits), 2 unusable input (files, specs, templates, settings, output).
"""

from __future__ import annotations

import atexit
import errno
import gc
import math
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import click

from lmi_config import __version__
from lmi_config.errors import InputError, OutputError, SpecError, TemplateProblem

if TYPE_CHECKING:
    from lmi_config.spec import Spec

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
USAGE_ERRORS = (InputError, OutputError, SpecError, TemplateProblem)


def _fail_input(message: str) -> None:
    from lmi_config.report import visible

    for line in message.splitlines() or [""]:
        click.echo(f"lmi-config: error: {visible(line)}", err=True)
    sys.exit(2)


def _stdin_bytes() -> bytes:
    """Standard input, read with the same cap as any file (exit 2 beyond it)."""
    from lmi_config.io import read_stdin

    try:
        return read_stdin()
    except InputError as error:
        _fail_input(str(error))
        raise


def _no_collection_at_exit() -> None:
    """Skip the garbage collector's passes at interpreter exit, which walk every object the imports
    made (pydantic, jinja2, click, the rules) only to free memory the operating system takes back
    anyway: about 30 ms of a cold ``render``. ``gc.freeze()`` in an exit handler (exit handlers run
    before those passes) moves every object out of their reach; output is still flushed, the other
    exit handlers still run, and nothing the command does changes. Registered once per process."""
    atexit.unregister(gc.freeze)
    atexit.register(gc.freeze)


# each command's module, imported only when the command runs (or --help lists them all): a lint
# does not pay for importing deploy's, plan's and render's modules
COMMAND_MODULES = {
    "lint": "check",
    "explain": "check",
    "deploy": "deploy",
    "images": "deploy",
    "models": "listings",
    "instances": "listings",
    "rules": "listings",
    "plan": "planning",
    "search": "planning",
    "render": "write",
    "convert": "write",
    "schema": "write",
}


class _GuardedGroup(click.Group):
    """Every command behind one guard: exhausted memory or recursion, a closed or full standard
    output become one line on stderr and exit code 2, never a traceback. Commands are registered
    by their modules (:data:`COMMAND_MODULES`), imported when first asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(self.commands) | set(COMMAND_MODULES))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMAND_MODULES:
            import importlib

            importlib.import_module(f"lmi_config.cli.{COMMAND_MODULES[cmd_name]}")  # registers it
        from lmi_config import collector

        collector.resume()  # the command's modules are in (lmi_config.launch paused collection)
        return self.commands.get(cmd_name)

    def main(self, *args: Any, **kwargs: Any) -> Any:
        # standalone mode (the console script, ``python -m lmi_config``) ends the process with the
        # command; a caller that keeps running (standalone_mode=False) keeps its own exit as it was
        standalone = kwargs.get("standalone_mode", args[3] if len(args) > 3 else True)
        if standalone:
            _no_collection_at_exit()
        return super().main(*args, **kwargs)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except MemoryError:
            _fail_input("ran out of memory; the input is too large or too deeply nested")
        except RecursionError:
            _fail_input("the input is nested too deeply to read")
        except OSError as error:
            if error.errno not in (errno.EPIPE, errno.ENOSPC, errno.EIO, errno.EBADF):
                raise
            from lmi_config.io import silence_stdout

            silence_stdout()
            _fail_input(f"cannot write the output: {error.strerror or error}")


JAVA_INT_MAX = 2**31 - 1  # the container's integers (Integer.parseInt): no count beyond is usable
DAY_SECONDS = 86_400


def count_range(minimum: int = 1, maximum: int = JAVA_INT_MAX) -> click.IntRange:
    """An integer flag bounded on both sides (click's own message names the flag and the range, exit 2):
    a count past the container's integers would be ranked, written and rendered as if usable."""
    return click.IntRange(minimum, maximum)


class FiniteFloat(click.FloatRange):
    """A number flag in a closed range that is also finite: click's FloatRange lets ``nan`` through
    (every comparison with NaN is false) and ``inf`` through an open upper bound."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number; {self._describe_range()}", param, ctx)
        return number


def _split(values: tuple[str, ...]) -> list[str]:
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


def _emit(text: str, output: str | None = None, what: str = "") -> None:
    """Print to stdout, or write ``output`` safely (``-`` is stdout)."""
    from lmi_config.io import write_output

    if output is None:
        output = "-"
    try:
        shown = write_output(output, text)
    except OutputError as error:
        _fail_input(str(error))
        return
    if output != "-":
        click.echo(f"wrote {shown}{f' ({what})' if what else ''}", err=True)


def target_options(*, env: bool = True) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The options every command that judges a configuration shares, defined once."""

    def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
        decorators = [
            click.option(
                "--instance",
                metavar="TYPE",
                help="Instance type, e.g. ml.inf2.24xlarge: enables parallelism and memory checks.",
            ),
            click.option(
                "--model",
                metavar="ID",
                help="Model id or local directory with config.json (default: option.model_id).",
            ),
            click.option(
                "--backend",
                metavar="NAME",
                help="vllm, lmi-dist, tensorrt-llm, transformers-neuronx (tnx), nxdi, huggingface … (default: inferred).",
            ),
            click.option(
                "--lmi-version",
                metavar="VERSION",
                help="0.30.0, v12 or an image tag (default: inferred from the file or the backend).",
            ),
            click.option(
                "--hub",
                is_flag=True,
                help="Look up models outside the built-in catalog on the Hugging Face Hub (needs lmi-config[hub]).",
            ),
            click.option(
                "--lnc",
                type=click.IntRange(1, 2),
                default=None,
                help="Trainium2 logical NeuronCore setting (default: NEURON_LOGICAL_NC_CONFIG from an env file, else 2).",
            ),
        ]
        if env:
            decorators.append(
                click.option(
                    "--env",
                    "env_files",
                    multiple=True,
                    metavar="FILE",
                    help="An env file the container sees together with each PATH.",
                )
            )
        for decorator in reversed(decorators):
            function = decorator(function)
        return function

    return decorate


def format_option(function: Callable[..., Any]) -> Callable[..., Any]:
    """``--format text|json`` for the commands whose result is a report or a listing."""
    return click.option(
        "--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True
    )(function)


def output_option(function: Callable[..., Any]) -> Callable[..., Any]:
    """``-o/--output`` for commands whose result goes through :func:`_emit` (``-`` is stdout)."""
    return click.option(
        "-o",
        "--output",
        metavar="FILE",
        default=None,
        help="Write to FILE atomically instead of stdout (- is stdout).",
    )(function)


# The spec fields a flag overrides, by the flag's parameter name (also the spec's field name).
SPEC_OVERRIDE_FLAGS = ("model", "model_architecture", "instance", "backend", "lmi_version", "objective")


def spec_options(function: Callable[..., Any]) -> Callable[..., Any]:
    """The spec options that ``render`` and ``deploy`` word identically, defined once.

    The other spec flags (--model, --model-architecture, --backend, --lmi-version, --set, --env,
    --objective) are declared by each command because their help is worded for that command (render
    mentions a local --model directory; deploy's --lmi-version picks the image; render's --env names
    the outputs it reaches). They must keep the parameter names :func:`spec_from_flags` reads.
    """
    decorators = [
        click.option("--instance", metavar="TYPE", help="Instance type, e.g. ml.inf2.24xlarge."),
        click.option(
            "--hub", is_flag=True, help="Look up models outside the catalog on the Hugging Face Hub."
        ),
    ]
    for decorator in reversed(decorators):
        function = decorator(function)
    return function


def spec_from_flags(spec_file: str | None, flags: Mapping[str, Any]) -> tuple[Spec, str]:
    """The spec from SPEC.yaml and/or the spec flags; returns (spec, the name errors use).

    ``flags`` holds the command's parameters: the fields in :data:`SPEC_OVERRIDE_FLAGS` (None = not
    given), ``settings`` (``--set KEY=VALUE``) and ``env_settings`` (``--env NAME=VALUE``); other
    keys are ignored. Raises :class:`SpecError` for a bad spec or flag.
    """
    from lmi_config.spec import build_spec

    return build_spec(
        spec_file,
        overrides={field: flags[field] for field in SPEC_OVERRIDE_FLAGS},
        settings=flags["settings"],
        env_settings=flags["env_settings"],
    )


def _lint_options(
    *,
    select: tuple[str, ...] = (),
    ignore: tuple[str, ...] = (),
    exclude: tuple[str, ...] = (),
    settings_file: str | None = None,
    isolated: bool = False,
    force_exclude: bool = False,
    **target: Any,
) -> Any:
    """LintOptions from the flags and the project settings; exit 2 for a bad settings file or rule name."""
    from lmi_config import api

    try:
        return api.lint_options(
            select=_split(select),
            ignore=_split(ignore),
            exclude=_split(exclude),
            settings_file=settings_file,
            isolated=isolated,
            force_exclude=force_exclude,
            **target,
        )
    except InputError as error:
        _fail_input(str(error))


@click.group(cls=_GuardedGroup, context_settings=CONTEXT_SETTINGS)
@click.version_option(__version__, "-V", "--version", prog_name="lmi-config")
def main() -> None:
    """Check and write DJL Serving / LMI configurations offline, in milliseconds.

    \b
    Examples:
      lmi-config lint serving.properties --instance ml.inf2.8xlarge
      lmi-config lint deploy/ --format github
      lmi-config explain serving.properties --instance ml.inf2.24xlarge
      lmi-config render spec.yaml -o serving.properties
      lmi-config convert serving.properties --to json
      lmi-config rules unknown-option
    """
