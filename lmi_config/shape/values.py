"""How the judge reads the numbers a configuration writes, and what it refuses to use.

The container parses an integer option with Java's ``Integer.parseInt`` (the front end) or
pydantic ``int`` (the Python handler), so a count past 2,147,483,647 fails there; a fraction of
GPU memory that is zero, negative, above 1 or not finite leaves no KV cache or fails vLLM's own
check. The judge never swaps such a value for a default: each one becomes an error of the
verdict (``invalid-value``) naming the key and the range it takes, and the dimension it carries
stays unknown, so nothing is sized from it.
"""

import math
import re
from typing import NamedTuple

from lmi_config.configfile.canonical import CanonicalConfig
from lmi_config.configfile.text import shorten
from lmi_config.knowledge.options import JAVA_INT_MAX, VARIABLE_NAME, catalogue, is_placeholder
from lmi_config.shape.problems import Problem

# ASCII digits only: str.isdigit() also accepts "²" and "١", which int() refuses or Java misreads
_INTEGER = re.compile(r"([+-]?)([0-9]+)", re.ASCII)
_JAVA_INT_DIGITS = len(str(JAVA_INT_MAX))
TP_KEY = "option.tensor_parallel_degree"


class Reading(NamedTuple):
    """A number as the judge reads it: its value, or why the written text cannot be used."""

    value: float | None = None
    problem: str | None = None  # None: usable, or nothing written (then value is None too)


def _not_written(text: str | None) -> bool:
    """Nothing to judge: absent, or a placeholder another tool fills in before the container reads it."""
    return text is None or is_placeholder(text) or bool(VARIABLE_NAME.fullmatch(text.strip()))


def read_count(text: str | None, *, minimum: int = 1) -> Reading:
    """A count as the container parses it: an integer from ``minimum`` to 2,147,483,647."""
    if _not_written(text):
        return Reading()
    assert text is not None
    allowed = f"the container takes an integer from {minimum} to {JAVA_INT_MAX}"
    match = _INTEGER.fullmatch(text.strip())
    if match is None:
        return Reading(problem=f"is not an integer: {allowed}")
    sign, digits = match.group(1), match.group(2).lstrip("0") or "0"
    # compared by length first: int() of a 5,000-digit string is refused by Python itself
    if len(digits) > _JAVA_INT_DIGITS or int(digits) > JAVA_INT_MAX:
        return Reading(
            problem=f"is {'smaller' if sign == '-' else 'larger'} than the container's integers: {allowed}"
        )
    value = -int(digits) if sign == "-" else int(digits)
    if value < minimum:
        return Reading(problem=f"is below {minimum}: {allowed}")
    return Reading(value)


def read_fraction(text: str | None) -> Reading:
    """A fraction of memory: a finite number above 0 and at most 1."""
    if _not_written(text):
        return Reading()
    assert text is not None
    allowed = "write a number above 0 and at most 1 (0.9 is the usual value)"
    try:
        value = float(text.strip())
    except ValueError:
        return Reading(problem=f"is not a number: {allowed}")
    if not math.isfinite(value):
        return Reading(problem=f"is not a finite number: {allowed}")
    if not 0 < value <= 1:
        return Reading(problem=f"is outside (0, 1]: {allowed}")
    return Reading(value)


def count_or_none(config: CanonicalConfig, key: str, *, minimum: int = 1) -> int | None:
    """A usable count under ``key``, else None (what is unusable is in :func:`unusable_values`)."""
    value = read_count(config.get(key), minimum=minimum).value
    return int(value) if value is not None else None


def fraction_or_none(config: CanonicalConfig, key: str) -> float | None:
    """A usable fraction under ``key``, else None (what is unusable is in :func:`unusable_values`)."""
    return read_fraction(config.get(key)).value


def tensor_parallel_minimum(backend: str) -> int:
    """The least TP degree a backend takes: -1 where the catalogue's default is -1 (the HF Accelerate
    handler's "one device"), else 1."""
    specs = catalogue().get(TP_KEY, ())
    own = [spec for spec in specs if backend in spec.backends]
    return -1 if any(spec.default == "-1" for spec in own) else 1


def written_but_unusable(config: CanonicalConfig, *keys: str, minimum: int = 1) -> bool:
    """Whether one of ``keys`` holds a count the judge cannot use (then it must not pick a default)."""
    return any(read_count(config.get(key), minimum=minimum).problem for key in keys)


# The keys whose numbers the judge reads beside the shape's dimensions, with the minimum each takes.
COUNT_KEYS = {
    "option.pipeline_parallel_degree": 1,
    "option.block_size": 1,
    "option.max_rolling_batch_prefill_tokens": 1,
    "option.max_num_batched_tokens": 1,
    "option.model_loading_timeout": 1,
    "option.neuron_optimize_level": 1,
}
FRACTION_KEYS = ("option.gpu_memory_utilization", "option.kv_cache_free_gpu_mem_fraction")


def unusable_values(config: CanonicalConfig, counts: dict[str, int]) -> list[Problem]:
    """An error for every key in ``counts`` (key → minimum) or :data:`FRACTION_KEYS` whose value
    the judge cannot use, naming the value and the range the container takes."""
    problems = []
    for key, minimum in counts.items():
        text = config.get(key)
        reason = read_count(text, minimum=minimum).problem
        if key == TP_KEY and (text or "").strip() == "max":
            reason = None
        if reason is not None:
            problems.append(_problem(key, text or "", reason))
    for key in FRACTION_KEYS:
        text = config.get(key)
        reason = read_fraction(text).problem
        if reason is not None:
            problems.append(_problem(key, text or "", reason))
    return problems


def _problem(key: str, text: str, reason: str) -> Problem:
    return Problem(
        "invalid-value",
        "error",
        f"{key}={shorten(text.strip())!r} {reason}; the judge cannot size a configuration from it",
        key=key,
    )
