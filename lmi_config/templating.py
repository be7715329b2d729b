"""A bounded jinja2 sandbox for the templates a user gives with ``--template-dir``.

jinja2's ``SandboxedEnvironment`` stops a template from reaching Python's internals, not from
running for ever or filling memory. A template here is held to:

- **loops**: at most :data:`MAX_LOOP_ITERATIONS` iterations of ``{% for %}`` in one render, all
  loops together (nested loops multiply, so a per-loop cap is not enough), and ``range()`` of at
  most :data:`MAX_RANGE_ITEMS` items;
- **sizes**: a string or list built by ``*``, ``+``, ``~`` or ``%`` is at most
  :data:`MAX_TEXT_CHARACTERS` long, an integer built by ``*`` or ``**`` at most
  :data:`MAX_INTEGER_BITS` bits, and a width or count given to a method or filter that pads,
  repeats or generates text (``center``, ``ljust``, ``indent``, ``format`` widths, ``lipsum``) at
  most :data:`MAX_TEXT_CHARACTERS`;
- **time and memory** (what the checks above miss): the template is rendered in a child process
  (``fork``) with at most :data:`MEMORY_HEADROOM_BYTES` more address space than lmi-config already
  uses and :data:`WALL_TIME_SECONDS` seconds, after which it is killed.

Hitting a bound, and any error the template raises (``OverflowError``, ``RecursionError``,
``TypeError`` …), is a :class:`lmi_config.errors.TemplateProblem` naming the template file:
exit code 2, never a traceback. The shipped templates are trusted and render in-process.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import select
import signal
import time
from typing import Any

from lmi_config.errors import TemplateProblem
from lmi_config.io import MAX_INPUT_BYTES

MAX_LOOP_ITERATIONS = 1_000_000
MAX_RANGE_ITEMS = 100_000  # jinja2's own MAX_RANGE, kept: a shipped-looking template may use it
MAX_TEXT_CHARACTERS = MAX_INPUT_BYTES  # nothing longer can be part of a file lmi-config reads back
MAX_INTEGER_BITS = 64 * 1024
WALL_TIME_SECONDS = 5.0
MEMORY_HEADROOM_BYTES = 512 * 1024 * 1024
_SIZE_FILTERS = ("center", "indent", "wordwrap", "truncate", "batch", "slice", "format")
# a number with more digits than the size bound, written in a format string (a width)
_BIG_NUMBER = re.compile(rf"\d{{{len(str(MAX_TEXT_CHARACTERS)) + 1},}}")


class TemplateBound(TemplateProblem):
    """A user template went past one of the bounds of this module."""


def _bounded_size(size: int, what: str) -> None:
    if size > MAX_TEXT_CHARACTERS:
        raise TemplateBound(
            f"{what} would be {size} long; a template may build at most {MAX_TEXT_CHARACTERS} characters or items"
        )


def _check_sizes(arguments: tuple[Any, ...], kwargs: dict[str, Any], what: str) -> None:
    for value in [*arguments, *kwargs.values()]:
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_TEXT_CHARACTERS:
            raise TemplateBound(
                f"{what} was given {value}; a width or count in a template may be at most {MAX_TEXT_CHARACTERS}"
            )


def _sequence_length(value: Any) -> int | None:
    return len(value) if isinstance(value, str | list | tuple) else None


def _check_binop(operator: str, left: Any, right: Any) -> None:
    """Refuse an operation whose result would be beyond the bounds, before it is computed."""
    left_length, right_length = _sequence_length(left), _sequence_length(right)
    if operator == "*":
        if left_length is not None and isinstance(right, int):
            _bounded_size(left_length * max(right, 0), "a repeated string or list")
        elif right_length is not None and isinstance(left, int):
            _bounded_size(right_length * max(left, 0), "a repeated string or list")
        elif isinstance(left, int) and isinstance(right, int):
            _bounded_bits(abs(left).bit_length() + abs(right).bit_length())
    elif operator == "+" and left_length is not None and right_length is not None:
        _bounded_size(left_length + right_length, "a joined string or list")
    elif operator == "**" and isinstance(left, int) and isinstance(right, int) and right > 0:
        _bounded_bits(max(abs(left).bit_length() - 1, 1) * right)
    elif operator == "%" and isinstance(left, str):
        numbers = right if isinstance(right, tuple) else (right,)
        _check_sizes(numbers, {}, "a % format")
        if _BIG_NUMBER.search(left):
            raise TemplateBound(f"a % format width beyond {MAX_TEXT_CHARACTERS} characters")


def _bounded_bits(bits: int) -> None:
    if bits > MAX_INTEGER_BITS:
        raise TemplateBound(
            f"an integer of about {bits} bits; a template may build at most {MAX_INTEGER_BITS}"
        )


@functools.cache
def _environment_class() -> type:
    """The bounded sandbox class (built on first use: jinja2 is imported only on the render path)."""
    from jinja2 import nodes
    from jinja2.compiler import CodeGenerator
    from jinja2.sandbox import SandboxedEnvironment

    class BoundedCodeGenerator(CodeGenerator):
        def visit_Concat(self, node: Any, frame: Any) -> None:
            # ``a ~ b`` is not an interceptable operator: route it through the bounded join
            self.write("environment.bounded_concat((")
            for argument in node.nodes:
                self.visit(argument, frame)
                self.write(", ")
            self.write("))")

    class BoundedSandbox(SandboxedEnvironment):
        code_generator_class = BoundedCodeGenerator
        intercepted_binops = frozenset({"*", "+", "**", "%"})

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.iterations = 0
            self.globals["range"] = self.bounded_range
            self.globals["lipsum"] = self._sized(self.globals["lipsum"], "lipsum()")
            self.globals["_lmi_config_iterate"] = self.iterate
            for name in _SIZE_FILTERS:
                self.filters[name] = self._sized(self.filters[name], f"the {name} filter", skip=1)

        def _sized(self, function: Any, what: str, skip: int = 0) -> Any:
            @functools.wraps(function)
            def checked(*arguments: Any, **kwargs: Any) -> Any:
                # the first arguments are the environment or context jinja2 passes, then the value
                passed = arguments[skip + (1 if hasattr(checked, "jinja_pass_arg") else 0) :]
                _check_sizes(tuple(passed), kwargs, what)
                return function(*arguments, **kwargs)

            return checked

        def bounded_range(self, *arguments: int) -> range:
            numbers = range(*arguments)
            if len(numbers) > MAX_RANGE_ITEMS:
                raise TemplateBound(
                    f"range() of {len(numbers)} items; a template may use at most {MAX_RANGE_ITEMS}"
                )
            return numbers

        def iterate(self, iterable: Any) -> Any:
            for item in iterable:
                self.iterations += 1
                if self.iterations > MAX_LOOP_ITERATIONS:
                    raise TemplateBound(
                        f"the template's loops ran more than {MAX_LOOP_ITERATIONS} iterations (nested loops multiply)"
                    )
                yield item

        def bounded_concat(self, pieces: tuple[Any, ...]) -> str:
            texts = [str(piece) for piece in pieces]
            _bounded_size(sum(len(text) for text in texts), "a string joined with ~")
            return "".join(texts)

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            _check_binop(operator, left, right)
            return super().call_binop(context, operator, left, right)

        def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
            if isinstance(getattr(__obj, "__self__", None), str | list | tuple):
                _check_sizes(args, kwargs, f"{getattr(__obj, '__name__', 'a method')}()")
            return SandboxedEnvironment.call(__self, __context, __obj, *args, **kwargs)

        def wrap_str_format(self, value: Any) -> Any:
            wrapped = super().wrap_str_format(value)
            if wrapped is not None and _BIG_NUMBER.search(str(getattr(value, "__self__", ""))):
                raise TemplateBound(f"a format width beyond {MAX_TEXT_CHARACTERS} characters")
            return wrapped

        def _parse(self, source: str, name: str | None, filename: str | None) -> Any:
            template = super()._parse(source, name, filename)
            for loop in template.find_all(nodes.For):
                # every loop counts its iterations against one budget per render
                loop.iter = nodes.Call(
                    nodes.Name("_lmi_config_iterate", "load"), [loop.iter], [], None, None, lineno=loop.lineno
                )
            return template

    return BoundedSandbox


def bounded_environment(**options: Any) -> Any:
    """A jinja2 sandbox holding templates to the loop and size bounds of this module."""
    return _environment_class()(**options)


def render_in_child(render: Any, where: str) -> str:
    """Run ``render()`` (which returns the text) in a forked child with the time and memory bounds;
    its :class:`TemplateProblem` or any other error comes back as a :class:`TemplateProblem`."""
    if not hasattr(os, "fork"):
        return _outcome(_attempt(render, where), where)
    reader, writer = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child's coverage is not collected
        os.close(reader)
        _limit_memory()
        payload = json.dumps(_attempt(render, where)).encode("utf-8", "surrogatepass")
        with os.fdopen(writer, "wb") as stream:
            stream.write(payload)
        os._exit(0)
    os.close(writer)
    try:
        data = _read_until(reader, time.monotonic() + WALL_TIME_SECONDS)
    finally:
        os.close(reader)
        _end(child)
    if data is None:
        raise TemplateBound(
            f"{where}: the template ran longer than {WALL_TIME_SECONDS:g} seconds; it was stopped"
        )
    if not data:
        raise TemplateBound(
            f"{where}: the template used more than {MEMORY_HEADROOM_BYTES // (1024 * 1024)} MiB of memory; it was stopped"
        )
    return _outcome(json.loads(data.decode("utf-8", "surrogatepass")), where)


def _attempt(render: Any, where: str) -> dict[str, str]:
    try:
        return {"text": render()}
    except TemplateProblem as error:
        message = str(error)
        return {"error": message if message.startswith(where) else f"{where}: {message}"}
    except MemoryError:
        return {
            "error": f"{where}: the template ran out of memory (at most {MEMORY_HEADROOM_BYTES // (1024 * 1024)} MiB)"
        }
    except RecursionError:
        return {"error": f"{where}: template nested or recursing too deeply"}
    except Exception as error:  # noqa: BLE001 - any error of a user's template is reported, never a traceback
        return {"error": f"{where}: template failed: {type(error).__name__}: {error}"}


def _outcome(result: dict[str, str], where: str) -> str:
    if "error" in result:
        raise TemplateProblem(result["error"])
    return result["text"]


def _limit_memory() -> None:  # pragma: no cover - runs in the child
    import resource

    try:
        with open("/proc/self/statm", encoding="ascii") as handle:
            used = int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = used + MEMORY_HEADROOM_BYTES
    if soft != resource.RLIM_INFINITY:
        limit = min(limit, soft)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _read_until(descriptor: int, deadline: float) -> bytes | None:
    """Everything the child writes, or None when the deadline passes first."""
    chunks: list[bytes] = []
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None
        ready, _, _ = select.select([descriptor], [], [], remaining)
        if not ready:
            return None
        chunk = os.read(descriptor, 1 << 16)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _end(child: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # it has already ended
        os.kill(child, signal.SIGKILL)
    os.waitpid(child, 0)
