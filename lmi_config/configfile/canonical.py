"""One canonical configuration: properties and env sets merged as the container merges them.

Keys are the ``serving.properties`` keys the container reads (``option.tensor_parallel_degree``,
``engine``, ``batch_size``…). Each value remembers where it came from. Precedence follows
djl-serving (djl-serving.md §1–§2): the file wins over ``OPTION_*`` (``putIfAbsent``),
``TENSOR_PARALLEL_DEGREE``-style variables only fill a missing option, ``SAGEMAKER_*``
overrides both, and ``SERVING_*`` sets a global default that a per-model key overrides.
"""

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

# How strongly a source holds a key; a higher rank wins. "fill" and "default" only apply
# when nothing of a higher rank set the key (putIfAbsent); "override" always wins.
ROLE_RANK = {"global": 0, "default": 1, "fill": 2, "generated": 3, "file": 4, "override": 5}


class Origin(NamedTuple):
    """Where a value was read."""

    path: str
    line: int | None
    kind: str  # properties | env | json | cli | spec
    variable: str | None = None  # the env variable name, for env sources

    def describe(self) -> str:
        """``serving.properties:3`` or ``OPTION_DTYPE in model.env:2``."""
        place = f"{self.path}:{self.line}" if self.line else self.path
        return f"{self.variable} in {place}" if self.variable else place


class Setting(NamedTuple):
    """One value of one canonical key."""

    key: str
    value: str
    origin: Origin
    role: str


class EnvMapping(NamedTuple):
    """What the container does with one environment variable."""

    kind: str  # config | tgi | foreign | secret | process | option-style | unknown
    key: str | None = None
    role: str | None = None
    also: tuple[str, ...] = ()
    target: str | None = None  # for tgi: the variable it is translated to
    detail: dict | None = None


def classify_env(name: str) -> EnvMapping:
    """Map one variable name the way the container does (djl-serving.md §2)."""
    from lmi_config.knowledge import environment

    variables = environment.named_variables()
    prefixes = environment.prefix_rules()
    tgi = environment.tgi_translations()
    foreign = environment.foreign_variables()
    process = environment.process_env_pattern()
    secrets = environment.secret_variables()
    if name in variables:
        row = variables[name]
        return EnvMapping("config", row["key"], row["role"], tuple(row.get("also", [])))
    if name in secrets:
        return EnvMapping("secret")
    if name in tgi:
        return EnvMapping("tgi", target=tgi[name]["target"], detail=tgi[name])
    if name in foreign:
        return EnvMapping("foreign", detail=foreign[name])
    if name.startswith("option.") or name in ("engine", "batch_size", "job_queue_size"):
        return EnvMapping("option-style")
    for rule in prefixes:
        prefix = rule["prefix"]
        if name.startswith(prefix) and len(name) > len(prefix):
            if prefix == "SERVING_" and process.fullmatch(name):
                return EnvMapping("process")
            rest = name[len(prefix) :]
            if re.fullmatch(rule["lowercase_if"], rest):
                rest = rest.lower()
            return EnvMapping("config", rule["target"] + rest, rule["role"])
    if process.fullmatch(name):
        return EnvMapping("process")
    return EnvMapping("unknown")


def env_name_for_key(key: str) -> str | None:
    """The environment variable that sets a canonical key, if any (the one mapping, used by render,
    convert and deploy).

    A variable marked ``written_for_key`` in the data wins (``option.model_id`` → ``HF_MODEL_ID``);
    ``option.entryPoint`` → ``OPTION_ENTRYPOINT``; other ``option.*`` keys → ``OPTION_*`` (mixed
    case kept, djl-serving.md §2); a model-level key → the server-wide variable the catalogue names
    for it (``batch_size`` → ``SERVING_BATCH_SIZE``), else None: only serving.properties can set it.
    """
    from lmi_config.knowledge import environment

    for name, row in environment.named_variables().items():
        if row.get("written_for_key") and row.get("key") == key:
            return name
    if key == "option.entryPoint":
        return "OPTION_ENTRYPOINT"
    if key.startswith("option."):
        rest = key[len("option.") :]
        if re.fullmatch(r"[a-z0-9_]+", rest):
            return "OPTION_" + rest.upper()
        if re.fullmatch(r"[A-Za-z0-9_]+", rest):
            return "OPTION_" + rest  # mixed case is kept as is by the container
        return None
    from lmi_config.knowledge.options import catalogue

    for spec in catalogue().get(key, ()):
        if spec.env:
            return spec.env
    return None


@dataclass(repr=False, eq=False)
class CanonicalConfig:
    """The effective configuration and every value that competed for each key."""

    settings: dict[str, Setting] = field(default_factory=dict)
    candidates: dict[str, list[Setting]] = field(default_factory=dict)
    # variables of the env files the container's processes inherit (VLLM_USE_V1, NEURON_CC_FLAGS):
    # not options, but the engine reads them
    process_environment: dict[str, str] = field(default_factory=dict)

    def offer(self, setting: Setting) -> None:
        """Add a value; it takes effect if its role outranks the current one."""
        key = setting.key
        competing = self.candidates.get(key)
        if competing is None:  # the common case: the first value of a key
            self.candidates[key] = [setting]
            self.settings[key] = setting
            return
        competing.append(setting)
        current = self.settings[key]
        new_rank, old_rank = ROLE_RANK[setting.role], ROLE_RANK[current.role]
        # Within the file the last duplicate wins; env fills never replace anything.
        if new_rank > old_rank or (new_rank == old_rank and setting.role in ("file", "override")):
            self.settings[setting.key] = setting

    def offer_file_entries(self, path: str, entries: Iterable[tuple[str, str, int]]) -> None:
        """Offer the ``(key, value, line)`` entries of one serving.properties file, in order: the
        same as :meth:`offer` for each with role ``file``, in one loop (files of a million lines)."""
        from lmi_config.configfile.text import collector_paused

        with collector_paused():
            self._offer_file_entries(path, entries)

    def _offer_file_entries(self, path: str, entries: Iterable[tuple[str, str, int]]) -> None:
        settings, candidates = self.settings, self.candidates
        outranked = ROLE_RANK["file"]
        for key, value, line in entries:
            setting = Setting(key, value, Origin(path, line, "properties", None), "file")
            competing = candidates.get(key)
            if competing is None:
                candidates[key] = [setting]
                settings[key] = setting
            else:
                competing.append(setting)
                if ROLE_RANK[settings[key].role] <= outranked:  # the last duplicate in a file wins
                    settings[key] = setting

    def get(self, key: str) -> str | None:
        """The effective value of a key, or None."""
        setting = self.settings.get(key)
        return setting.value if setting else None

    def has(self, key: str) -> bool:
        return key in self.settings

    def items(self) -> list[tuple[str, str]]:
        """``(key, value)`` pairs in a stable order: model keys, then ``option.*`` sorted."""
        keys = sorted(self.settings, key=lambda key: (key.startswith("option."), key))
        return [(key, self.settings[key].value) for key in keys]
