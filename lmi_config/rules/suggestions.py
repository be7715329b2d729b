"""Did-you-mean for unknown keys, linear in the size of the input.

The catalogue's keys are indexed once per run by character trigrams; an unknown key is compared
character by character (difflib, ratio >= 0.8) only with the few known keys that share the most
trigrams with it and have a length that could reach the cutoff. A file of a million unknown keys
costs a million index look-ups instead of a billion string comparisons (1.1 ms per key before).
"""

from __future__ import annotations

from collections import Counter
from functools import cache, lru_cache
from itertools import chain

from lmi_config.knowledge import Release, version_tuple
from lmi_config.knowledge.options import OptionSpec, catalogue, known_keys

_SUGGESTION_CUTOFF = 0.8  # difflib ratio: a typo or two in a key of normal length
_SHORT_BODY = 6  # known keys of at most this many characters after option. are always candidates
_MAX_CANDIDATES = 12  # keys compared character by character, at most, per unknown key
_MAX_TRIGRAMS = 64  # of an unknown key, at most (a key longer than any known one has no match)


def _body(key: str) -> str:
    """The part after ``option.`` (or after a misspelt ``opton.``): the prefix every option shares
    would make every key a candidate."""
    head, dot, tail = key.partition(".")
    return tail if dot and len(head) <= len("option") + 2 else key


def _trigrams(text: str) -> set[str]:
    padded = "^" + text + "$"
    return {padded[index : index + 3] for index in range(min(len(padded) - 2, _MAX_TRIGRAMS))}


def _query_bodies(key: str) -> list[str]:
    import difflib

    body = _body(key)
    if (
        body == key
        and len(key) > len("option.")
        and difflib.SequenceMatcher(None, key[: len("option.")].lower(), "option.").quick_ratio() >= 0.7
    ):  # optionfdtype: the dot itself may be the typo
        return [body, key[len("option") :], key[len("option.") :]]
    return [body]


@cache
def _suggestion_index() -> tuple[
    tuple[str, ...], dict[str, tuple[int, ...]], dict[int, tuple[int, ...]], dict[str, str]
]:
    """Built once per run: the known keys, the keys holding each trigram, short keys by length,
    and keys by lower case."""
    keys = known_keys()
    postings: dict[str, list[int]] = {}
    short: dict[int, list[int]] = {}
    for position, key in enumerate(keys):
        body = _body(key)
        for gram in _trigrams(body):
            postings.setdefault(gram, []).append(position)
        if len(body) <= _SHORT_BODY + 2:
            short.setdefault(len(body), []).append(position)
    lowered = {key.lower(): key for key in keys if key.startswith("option.")}
    return (
        keys,
        {gram: tuple(found) for gram, found in postings.items()},
        {length: tuple(found) for length, found in short.items()},
        lowered,
    )


def same_but_case(key: str) -> str | None:
    """The known key that ``key`` spells with other letter cases (``OPTION.TENSOR_PARALLEL_DEGREE``
    → ``option.tensor_parallel_degree``): java.util.Properties and the properties classes compare
    keys exactly, so the container ignores such a key like any unknown one."""
    found = _keys_by_lower_case().get(key.lower())
    return found if found is not None and found != key else None


def spelling_advice(key: str, variable: str | None = None) -> str:
    """What to write instead of an unknown key: its right letter case, the closest key, or the docs.
    ``variable``: the environment variable that set the key (the advice then names a variable)."""
    same = same_but_case(key)
    if same is not None and variable:
        from lmi_config.configfile.canonical import env_name_for_key

        return f"variable names are case-sensitive: write {env_name_for_key(same) or same}"
    if same is not None:
        return f"the container's keys are case-sensitive: write {same}"
    hint = suggest(key)
    return (
        f"did you mean {hint}?"
        if hint
        else "check the spelling against `lmi-config rules LMI101` and the LMI docs"
    )


@cache
def _keys_by_lower_case() -> dict[str, str]:
    return {key.lower(): key for key in known_keys()}


@cache
def _known_lengths() -> tuple[int, int]:
    lengths = [len(key) for key in known_keys()]
    return min(lengths), max(lengths)


@lru_cache(maxsize=65536)
def suggest(key: str) -> str | None:
    """The closest known key, for "did you mean"; linear in the length of ``key``.

    Only the few known keys sharing the most character trigrams with ``key`` (and of a length
    that could reach the cutoff) are compared with difflib, so a file of a million unknown keys
    costs a million index look-ups, not a billion string comparisons.
    """
    import difflib

    if not key.startswith("option.") and "option." + key in catalogue():
        return "option." + key
    keys, postings, short, lowered = _suggestion_index()
    # ratio >= 0.8 needs lengths within a factor 1.5
    low, high = len(key) / 1.5, len(key) * 1.5
    if high < _known_lengths()[0] or low > _known_lengths()[1]:
        return None
    bodies = _query_bodies(key)
    grams = set().union(*(_trigrams(body) for body in bodies))
    counts = Counter(chain.from_iterable(postings.get(gram, ()) for gram in grams))
    needed = min(len(_trigrams(body)) for body in bodies)
    for body in bodies:
        if len(body) <= _SHORT_BODY:  # a typo in a short name leaves few trigrams in common
            for length in range(len(body) - 2, len(body) + 3):
                counts.update(dict.fromkeys(short.get(length, ()), needed))
    ranked = sorted(
        (-shared, abs(len(keys[position]) - len(key)), keys[position])
        for position, shared in counts.items()
        if low <= len(keys[position]) <= high and shared * 3 >= needed
    )
    candidates = [candidate for _, _, candidate in ranked[:_MAX_CANDIDATES]]
    matches = difflib.get_close_matches(key, candidates, n=1, cutoff=_SUGGESTION_CUTOFF)
    if not matches and key.startswith("option."):
        found = lowered.get(key.lower())
        matches = [found] if found else []
    return matches[0] if matches else None


def release_spans(specs: list[OptionSpec]) -> str:
    """The releases any of ``specs`` is in, as merged runs named once each (``0.20.0 to 0.27.0``):
    adjacent version ranges of one option are one span to a user."""
    from lmi_config.knowledge import releases

    by_version: dict[str, list[Release]] = {}
    for release in releases():
        by_version.setdefault(release.djl, []).append(release)
    ordered = sorted(by_version, key=version_tuple)
    runs: list[list[str]] = []
    previous_in = False
    for version in ordered:
        inside = any(spec.available_in(release) for spec in specs for release in by_version[version])
        if inside and previous_in:
            runs[-1][1] = version
        elif inside:
            runs.append([version, version])
        previous_in = inside
    if not runs:
        return "; ".join(sorted({spec.range_text() for spec in specs}))
    first, last = ordered[0], ordered[-1]
    texts = []
    for start, end in runs:
        if start == first and end == last:
            texts.append("every version")
        elif start == first:
            texts.append(f"up to {end}")
        elif end == last:
            texts.append(f"{start} and later")
        else:
            texts.append(f"{start} to {end}" if start != end else start)
    return "; ".join(texts)
