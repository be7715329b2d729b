"""``--template-dir`` templates are bounded (issue 16): loops, sizes, time and memory. Each hostile
template runs through the real CLI with a time and memory limit and must end with exit code 2, a
message naming the template file, nothing executed, and the previous output file untouched."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import test_hostile_inputs
from test_hostile_inputs import assert_refused, run, settle, write

from lmi_config.templating import MAX_LOOP_ITERATIONS, WALL_TIME_SECONDS

untouched = test_hostile_inputs.untouched  # the fixture: pre-existing files must stay as they were
TEMPLATE = "serving.properties.j2"


def render_with(directory: Path, template: str, *, timeout: float = 60) -> test_hostile_inputs.Run:
    write(directory / "templates" / TEMPLATE, template)
    write(directory / "serving.properties", "option.model_id=previous\n")
    settle(directory)
    return run(
        "render",
        "--model",
        "gpt2",
        "--template-dir",
        "templates",
        "-o",
        "serving.properties",
        cwd=directory,
        timeout=timeout,
    )


@pytest.mark.parametrize(
    ("template", "mention"),
    [
        ("{{ 'a'*10**9 }}", "a repeated string or list would be 1000000000 long"),
        ("{{ [0]*10**9 }}", "a repeated string or list"),
        ("{{ 'a'*4000000 + 'b'*4000000 }}", "a joined string or list"),
        (
            "{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
            "joined with ~",
        ),
        ("{{ 10**(10**7) }}", "an integer of about"),
        ("{{ '%999999999s' % 'a' }}", "% format width"),
        ("{{ '{:>999999999}'.format('a') }}", "format width"),
        ("{{ 'a'.ljust(10**9) }}", "ljust() was given 1000000000"),
        ("{{ 'a'|center(10**9) }}", "the center filter was given"),
        ("{{ 'a'|indent(10**9) }}", "the indent filter was given"),
    ],
)
def test_a_template_cannot_build_a_huge_string_list_or_number(
    untouched: Path, template: str, mention: str
) -> None:
    started = time.monotonic()
    assert_refused(render_with(untouched, template), 2, f"templates/{TEMPLATE}", mention)
    assert time.monotonic() - started < 20


@pytest.mark.parametrize(
    "template",
    [
        "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}",
        "{% for a in range(1000) %}{% for b in range(1000) %}{% for c in range(1000) %}{% endfor %}{% endfor %}{% endfor %}",
        "{% for a in range(2000) %}{% for b in range(2000) if b %}{{ '' }}{% else %}{% endfor %}{% endfor %}",
    ],
)
def test_nested_loops_stop_at_one_iteration_budget(untouched: Path, template: str) -> None:
    result = render_with(untouched, template)
    assert_refused(result, 2, f"templates/{TEMPLATE}", f"more than {MAX_LOOP_ITERATIONS} iterations")


def test_range_beyond_the_sandbox_limit_is_a_message_not_a_traceback(untouched: Path) -> None:
    assert_refused(
        render_with(untouched, "{{ range(10**6)|list }}"),
        2,
        f"templates/{TEMPLATE}",
        "range() of 1000000 items",
    )


@pytest.mark.parametrize(
    ("template", "mention"),
    [
        ("{{ 1/0 }}", "ZeroDivisionError"),
        ("{{ 'a' + 1 }}", "TypeError"),
        ("{{ 10.0**400 }}", "OverflowError"),
        ("{% macro m(n) %}{{ m(n + 1) }}{% endmacro %}{{ m(0) }}", "too deeply"),
        ("{{ items|dictsort(by='nothing') }}", "template error"),
    ],
)
def test_any_error_of_a_template_names_the_file_without_a_traceback(
    untouched: Path, template: str, mention: str
) -> None:
    assert_refused(render_with(untouched, template), 2, f"templates/{TEMPLATE}", mention)


def test_a_template_that_runs_too_long_is_stopped(untouched: Path) -> None:
    # within every loop and size bound, but 100,000 sums of 100,000 numbers take minutes
    template = "{% for i in range(100000) %}{{ range(100000)|sum }}{% endfor %}"
    started = time.monotonic()
    result = render_with(untouched, template, timeout=WALL_TIME_SECONDS + 30)
    assert_refused(result, 2, f"templates/{TEMPLATE}", f"longer than {WALL_TIME_SECONDS:g} seconds")
    assert time.monotonic() - started < WALL_TIME_SECONDS + 15


def test_a_template_that_fills_memory_is_stopped(untouched: Path) -> None:
    # every piece is within the size bound; together they are far beyond any memory
    template = (
        "{% set ns = namespace(pieces=[]) %}{% for i in range(100000) %}"
        "{% set _ = ns.pieces.append('x' * 4000000) %}{% endfor %}"
    )
    result = render_with(untouched, template)
    assert_refused(result, 2, f"templates/{TEMPLATE}", "memory")


def test_a_template_cannot_run_commands_or_write_files(untouched: Path) -> None:
    canary = untouched / "CANARY"
    attacks = [
        "{{ cycler.__init__.__globals__.os.system('touch " + str(canary) + "') }}",
        "{{ ''.__class__.__mro__[1].__subclasses__() }}",
        "{{ lipsum.__globals__['os'].popen('touch " + str(canary) + "').read() }}",
    ]
    for attack in attacks:
        result = render_with(untouched, attack)
        assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
        assert f"templates/{TEMPLATE}" in result.stderr
        assert not canary.exists()


def test_a_template_within_the_bounds_renders(untouched: Path) -> None:
    template = (
        "# {{ header|length }} header lines\n"
        "{% for key, value in items %}{{ key }}={{ value }}{% if loop.last %}\n# {{ loop.length }} keys{% endif %}\n"
        "{% endfor %}{% for a in range(500) %}{% for b in range(500) %}{% endfor %}{% endfor %}"
        "# {{ 'x' * 10 ~ '-' ~ 2**10 }}\n"
    )
    write(untouched / "templates" / TEMPLATE, template)
    result = run(
        "render", "--model", "gpt2", "--template-dir", "templates", "-o", "out.properties", cwd=untouched
    )
    assert result.returncode == 0, result.stderr
    text = (untouched / "out.properties").read_text()
    assert "option.model_id=gpt2\n" in text and "# xxxxxxxxxx-1024" in text and " keys\n" in text
