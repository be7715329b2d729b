"""Writing canonical key/value pairs as serving.properties, an env file or SageMaker Environment JSON.

Templates live in ``templates/`` and are rendered by jinja2's sandbox with ``StrictUndefined``;
keys and values are passed as data, already written for the target format by its one writer in
:mod:`lmi_config.escaping` (which refuses what the format's readers would read differently),
never as template source. The key → environment-variable mapping is the container's
(:func:`lmi_config.configfile.canonical.env_name_for_key`).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from lmi_config.configfile.canonical import env_name_for_key
from lmi_config.errors import TemplateProblem as TemplateProblem
from lmi_config.escaping import env_line, json_environment, properties_line
from lmi_config.io import MAX_INPUT_BYTES
from lmi_config.knowledge.environment import sagemaker_environment_limits

TEMPLATE_DIR = Path(__file__).resolve().parent / "templates"
TEMPLATES = {"properties": "serving.properties.j2", "env": "env.j2", "json": "environment.json.j2"}
FORMATS = tuple(TEMPLATES)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def environment_items(
    items: list[tuple[str, str]], extra_env: dict[str, str]
) -> tuple[list[tuple[str, str]], list[str]]:
    """Map canonical keys to environment variables; report what has no env form."""
    result: list[tuple[str, str]] = []
    lost: list[str] = []
    for key, value in items:
        name = env_name_for_key(key)
        if name is None:
            lost.append(f"{key} has no environment-variable form (only serving.properties can set it)")
            continue
        result.append((name, value))
    result.extend(sorted(extra_env.items()))
    return result, lost


def _bounded_loader(directory: Path) -> Any:
    """A jinja2 loader reading templates through the bounded reader: a FIFO or a device named like
    a template is refused (:class:`TemplateProblem`) instead of hanging or filling memory."""
    import jinja2

    from lmi_config.io import InputError, read_bounded

    def load(name: str) -> tuple[str, str, Any] | None:
        path = directory / name
        if not os.path.lexists(path):
            return None  # the next loader (the shipped templates) is asked
        try:
            text = read_bounded(path).decode("utf-8")
        except InputError as error:
            raise TemplateProblem(f"template {error}") from None
        except UnicodeDecodeError as error:
            raise TemplateProblem(f"{path}: template is not UTF-8 text (byte {error.start})") from None
        return text, str(path), lambda: False  # read once per run: never "up to date" for a cache

    return jinja2.FunctionLoader(load)


def _template_environment(template_dir: Path | None) -> Any:
    import jinja2  # only on the render path

    from lmi_config.templating import bounded_environment

    loaders: list[Any] = []
    if template_dir is not None:
        loaders.append(_bounded_loader(template_dir))
    loaders.append(jinja2.FileSystemLoader(str(TEMPLATE_DIR)))
    return bounded_environment(
        loader=jinja2.ChoiceLoader(loaders),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
    )


def _render(template_dir: Path | None, output_format: str, **values: Any) -> str:
    """Render one template; a user's template (``--template-dir``) in a child process with the
    time and memory bounds of :mod:`lmi_config.templating`, the shipped ones in this process."""
    from lmi_config.templating import render_in_child

    name = TEMPLATES[output_format]
    if template_dir is None:
        return _render_here(template_dir, name, name, values)
    where = f"{template_dir}/{name}"
    return render_in_child(lambda: _render_here(template_dir, name, where, values), where)


def _render_here(template_dir: Path | None, name: str, where: str, values: dict[str, Any]) -> str:
    import jinja2

    try:
        template = _template_environment(template_dir).get_template(name)
        return _bounded_render(template, where, values)
    except RecursionError:
        raise TemplateProblem(f"{where}: template nested too deeply (or recursing without end)") from None
    except jinja2.TemplateSyntaxError as error:
        raise TemplateProblem(
            f"{error.filename or where}:{error.lineno}: template error: {error.message}"
        ) from None
    except jinja2.exceptions.SecurityError as error:
        raise TemplateProblem(f"{where}: template refused by the sandbox: {error}") from None
    except jinja2.TemplateError as error:
        raise TemplateProblem(f"{where}: template error: {error}") from None


def _bounded_render(template: Any, where: str, values: dict[str, Any]) -> str:
    """Render piece by piece, stopping at the input cap: a template loop cannot fill memory."""
    pieces: list[str] = []
    total = 0
    for piece in template.generate(**values):
        total += len(piece)
        if total > MAX_INPUT_BYTES:
            raise TemplateProblem(
                f"{where}: the template writes more than {MAX_INPUT_BYTES} characters; lmi-config reads at most "
                f"{MAX_INPUT_BYTES} bytes of one configuration"
            )
        pieces.append(piece)
    return "".join(pieces)


def _oversized(text: str) -> list[str]:
    size = len(text.encode("utf-8"))
    if size <= MAX_INPUT_BYTES:
        return []
    return [
        f"the output is {size} bytes; lmi-config reads at most {MAX_INPUT_BYTES} bytes of one configuration"
    ]


def header_lines(lines: list[str]) -> list[str]:
    """Header comments on one line each (control characters become blanks, credentials masked)."""
    from lmi_config.secrets import redact

    return [_CONTROL.sub(" ", redact(line)) for line in lines]


def format_output(
    items: list[tuple[str, str]],
    output_format: str,
    *,
    header: list[str],
    extra_env: dict[str, str] | None = None,
    template_dir: Path | None = None,
) -> tuple[str, list[str]]:
    """Render canonical items in a format; returns (text, problems that make it unusable or lossy).

    Raises :class:`TemplateProblem` for a template that cannot be rendered and
    :class:`lmi_config.escaping.ValueNotCarried` for a key or value the format's readers would read
    differently.
    """
    problems: list[str] = []
    if output_format == "properties":
        escaped = [properties_line(key, value) for key, value in items]
        for name in sorted(extra_env or {}):
            problems.append(
                f"{name} is an environment variable; serving.properties cannot set it (use the env or json format)"
            )
        text = _render(template_dir, output_format, header=header_lines(header), items=escaped)
        return text, problems + _oversized(text)
    env_items, lost = environment_items(items, extra_env or {})
    problems.extend(lost)
    if output_format == "env":
        written = [env_line(name, value) for name, value in env_items]
        text = _render(template_dir, output_format, header=header_lines(header), items=written)
        return text, problems + _oversized(text)
    limits = sagemaker_environment_limits()
    if len(env_items) > limits.max_entries:
        problems.append(
            f"SageMaker allows at most {limits.max_entries} environment variables; this has {len(env_items)}"
        )
    for name, value in env_items:
        if not re.fullmatch(limits.key_pattern, name):
            problems.append(f"{name}: SageMaker environment keys must match {limits.key_pattern}")
        if len(value) > limits.max_value_length:
            problems.append(
                f"{name}: value is {len(value)} characters; SageMaker allows {limits.max_value_length}"
            )
    document = json_environment(env_items)
    text = _render(template_dir, output_format, document=document)
    return text, problems + _oversized(text)


def written_from(written: str, items: dict[str, str], env: dict[str, str]) -> str:
    """Where a refused variable or key of a render came from, as the user wrote it (``--env`` /
    ``env:`` or ``--set`` / ``options:``), as a prefix for the refusal."""
    if written in env:
        return "env (--env): "
    key = next((key for key in items if written in (key, env_name_for_key(key))), written)
    return f"{key} (options / --set) as " if key != written else "options (--set): "
