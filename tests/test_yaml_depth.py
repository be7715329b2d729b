"""The spec reader's own YAML depth bound: read from the text, never below the real nesting."""

from __future__ import annotations

import yaml
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from lmi_config.configfile.text import yaml_nesting_bound

scalars = st.one_of(
    st.integers(-1000, 1000),
    st.booleans(),
    st.text(alphabet="ab[]{}#:-'\" |>\n", max_size=8),
)
documents = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.dictionaries(st.text(alphabet="abc[{#: ", min_size=1, max_size=4), children, max_size=3),
    ),
    max_leaves=20,
)


def real_depth(value: object) -> int:
    if isinstance(value, dict):
        return 1 + max((real_depth(item) for item in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((real_depth(item) for item in value), default=0)
    return 0


@settings(max_examples=1000, deadline=None)
@given(documents, st.sampled_from([None, True, False]), st.integers(2, 6))
@example({":[": [[[0]]]}, False, 2)  # a key's bracket that never closes hid the block lines after it
def test_the_bound_is_never_below_the_nesting_yaml_builds(
    document: object, flow: bool | None, indent: int
) -> None:
    text = yaml.safe_dump(document, default_flow_style=flow, indent=indent, width=20)
    assume(yaml.safe_load(text) == document)  # PyYAML folds some odd strings wrongly at width 20
    bound, _ = yaml_nesting_bound(text)
    assert bound >= real_depth(document)


def test_a_spec_shaped_document_is_counted_close_to_its_depth() -> None:
    text = "model: gpt2\noptions:\n  rope_scaling: {type: linear, factor: 2.0}\n  note: '[[[[' # {{{{\n"
    assert yaml_nesting_bound(text) == (5, 3)  # 3 deep; two columns open, each counted twice, + 1 flow


def test_block_scalar_text_is_not_counted() -> None:
    assert yaml_nesting_bound("a: |\n  [[[[[[\n  {{{{{\nb: 1\n")[0] == 2  # one column


def test_the_deepest_line_is_named() -> None:
    assert yaml_nesting_bound("a: 1\nb:\n  c: " + "[" * 40 + "]" * 40 + "\n") == (44, 3)


def test_deep_block_nesting_is_refused_with_our_message_before_the_parser() -> None:
    import pytest

    from lmi_config.errors import SpecError
    from lmi_config.spec import parse_spec_text

    for text in ("model: gpt2\nx:\n" + "- " * 50_000 + "1\n", "x: " + "{a: " * 5_000 + "\n"):
        with pytest.raises(SpecError, match=r"spec.yaml:\d+: nested more than 32 levels deep"):
            parse_spec_text(text, "spec.yaml")
