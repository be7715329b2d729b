"""The combinations of ``data/conflicts.json`` evaluated on a lint unit (``conflicting-options``).

A combination is a list of conditions on the canonical keys. One that names a ``validator`` is a
check of the container's own code: it applies at the releases whose branch has that validator
with that message (``data/djl_properties.json``), and the finding quotes the message; its
``since`` / ``until``, when given, narrow that further (written down where the code around the
validator decides, e.g. a device map the handler sets itself before 0.30).
"""

from collections.abc import Iterator
from typing import Any, NamedTuple

from lmi_config.configfile.canonical import CanonicalConfig, Setting
from lmi_config.knowledge import version_tuple
from lmi_config.knowledge.container_options import UNREAD, linked_outcome
from lmi_config.knowledge.options import conflict_rules, is_placeholder
from lmi_config.rules.base import LintUnit
from lmi_config.shape.values import read_count

_TRUE = {"true", "1", "yes", "on"}


class Match(NamedTuple):
    """One combination found: what to say, where, how severe."""

    message: str
    setting: Setting | None
    severity: str


class _Condition(NamedTuple):
    holds: bool
    key: str | None
    shown: str | None  # the value the message shows (the effective one for an effective_* op)


def _first_present(config: CanonicalConfig, key: str | list[str]) -> str | None:
    keys = [key] if isinstance(key, str) else key
    return next((item for item in keys if config.has(item)), None)


def _effective_rolling_batch(unit: LintUnit) -> str:
    """What ``option.rolling_batch`` becomes, as the judge resolves it (the recommender's choice)."""
    if unit.assessment is not None:
        return unit.assessment.shape.batching.rolling_batch.value
    return (unit.config.get("option.rolling_batch") or "auto").strip().lower()


def _holds(unit: LintUnit, condition: dict[str, Any]) -> _Condition:
    """Whether one condition holds, the key it looked at and the value to show."""
    config = unit.config
    if "any" in condition:
        for alternative in condition["any"]:
            found = _holds(unit, alternative)
            if found.holds:
                return found
        return _Condition(False, None, None)
    key = _first_present(config, condition["key"])
    op = condition["op"]
    value = (config.get(key) or "").strip() if key else None
    if op.startswith("effective_"):
        effective = _effective_rolling_batch(unit)
        wanted = {str(item).lower() for item in condition["values"]}
        return _Condition((effective in wanted) == (op == "effective_in"), key, effective)
    if op == "absent":
        return _Condition(key is None, None, None)
    if op == "not_true":
        return _Condition(value is None or value.lower() not in _TRUE, key, value)
    if op == "absent_or_not_in":
        return _Condition(
            value is None or value not in {str(item) for item in condition["values"]}, key, value
        )
    if value is None:
        return _Condition(False, None, None)
    return _Condition(_compare(config, op, value, condition), key, value)


def _compare(config: CanonicalConfig, op: str, value: str, condition: dict[str, Any]) -> bool:
    if op == "present":
        return True
    if op == "in":
        return value.lower() in {str(item).lower() for item in condition["values"]}
    if op == "not_in":
        return value not in {str(item) for item in condition["values"]}
    if op == "ne":
        return value != str(condition["value"])
    if op == "gt":
        number = read_count(value, minimum=0).value
        return number is not None and number > int(condition["value"])
    if op == "differs_from":
        other = config.get(condition["other"])
        return other is not None and other.strip() != value
    raise ValueError(f"unknown condition op {op!r} in conflicts.json")


def _applies(unit: LintUnit, conflict: dict[str, Any]) -> tuple[bool, str | None]:
    """Whether the combination holds for the unit's backend and release, and the container's message."""
    context = unit.context
    if "backends" in conflict and context.backend.id not in conflict["backends"]:
        return False, None
    if conflict.get("since") and context.release.djl_tuple < version_tuple(conflict["since"]):
        return False, None
    if conflict.get("until") and context.release.djl_tuple > version_tuple(conflict["until"]):
        return False, None
    link = conflict.get("validator")
    if link is None:
        return True, None
    found = linked_outcome(link, context.backend.id, context.release)
    if found is UNREAD:
        # a release older than the branches the generator reads: the hand-written range decides
        return bool(conflict.get("since") or conflict.get("until")), None
    if found is None:
        return False, None
    return True, found


def matches(unit: LintUnit) -> Iterator[Match]:
    """Every combination of conflicts.json that the unit's settings form."""
    for conflict in conflict_rules():
        applies, container_message = _applies(unit, conflict)
        if not applies:
            continue
        found = [_holds(unit, condition) for condition in conflict["all"]]
        if not all(item.holds for item in found):
            continue
        written = [unit.config.get(item.key) for item in found if item.key]
        if any(value is not None and is_placeholder(value) for value in written):
            continue
        shown = [(item.shown or "").strip() for item in found]
        message = conflict["message"].format(*shown)
        if container_message:
            message += f": {conflict['validator']['class']} raises {container_message!r}"
        anchors = [
            item.key
            for item, condition in zip(found, conflict["all"], strict=True)
            if condition.get("anchor")
        ]
        key = next((k for k in anchors if k), None) or next((item.key for item in found if item.key), None)
        setting = unit.config.settings.get(key) if key else None
        yield Match(f"{message}; {conflict['fix'].format(*shown)}", setting, conflict["severity"])
