#!/usr/bin/env python3
"""Generate lmi_config/data/models_generated.json: model configs from NVIDIA's aiconfigurator wheels.

The aiconfigurator wheels on PyPI (Apache-2.0) ship Hugging Face ``config.json`` copies as
``aiconfigurator/model_configs/<org>--<name>_config.json`` (and ``<org>--<name>_hf_quant_config.json``
for ModelOpt checkpoints, whose quantization is stated there instead of in config.json). Releases
0.4.0 to 0.10.0 hold them; later ones ship none. For every model in any of those wheels (the newest
wheel wins; the entry records which wheel and path) this script writes the config verbatim, its
source, and:

- ``total_params``: computed by lmi-config's own parameter formula (``modelarch.estimate_params``)
  when the memory model describes the layout; otherwise null;
- ``memory_not_estimated``: why the memory model cannot size the model (a layout the formulas do
  not cover, a vision encoder), or null; a checkpoint stored quantized is judged per backend when
  it is linted (``shape.dimensions.unsized_checkpoint``).

Models already in the hand-curated ``models.json`` (by id or alias) are not written; their numbers
are compared with the wheel's copy and every disagreement is printed (``--compare``), which checks
the hand catalog independently.

A second source widens the catalog: the model table of Lightning AI's LitGPT (``litgpt/config.py``
in the litgpt wheel, Apache-2.0), which states each model's Hub id and its dimensions (layers,
widths, heads, KV groups, vocabulary rows, context, experts). Its entries are not config.json
copies, so a model is written from it only when both hold:

- no other source has it (the hand catalog and the aiconfigurator copies win), and
- its architecture is known without guessing from names: a catalog model of the same organisation,
  text-only, has exactly the same dimensions and one architecture. Then that model's architecture,
  model type, tied embeddings and activation are taken (Qwen2.5-Coder-7B: those of Qwen2.5-7B), and
  the entry's source says so.

LitGPT's context length, sliding window and rope base are its own settings, not config.json's (they
differ for 28 of the figures of the 125 models both sources have), so they are not taken: the context
of a model from this source is unknown, and the checks that need it say so.

Every other LitGPT model is left out (``--compare`` lists them with the reason). Where LitGPT and
the catalog both have a model, its dimensions are compared and each disagreement printed, which
checks the translation of LitGPT's field names and both sources at once.

How a wheel is obtained: the cache directory (default ``~/.cache/lmi-config/aiconfigurator``), else
``pip download --no-deps aiconfigurator==X`` into it. ``--check`` regenerates into memory and
exits 1 when the committed file differs.

Run: python scripts/gen_model_catalog.py [--check] [--compare]   (deterministic)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import types
import zipfile
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from lmi_config.knowledge import load_data  # noqa: E402  (the project's own loader and formula)
from lmi_config.modelarch import normalize_config  # noqa: E402
from lmi_config.modelfields import ModelResolutionError, layout_not_modelled  # noqa: E402

VERSIONS = ("0.4.0", "0.5.0", "0.7.0", "0.8.0", "0.10.0")
PREFIX = "aiconfigurator/model_configs/"
CONFIG_SUFFIX = "_config.json"
QUANT_SUFFIX = "_hf_quant_config.json"
OUTPUT = REPO_ROOT / "lmi_config" / "data" / "models_generated.json"
DEFAULT_CACHE = Path.home() / ".cache" / "lmi-config" / "aiconfigurator"
LITGPT_VERSION = "0.5.13"
LITGPT_MEMBER = "litgpt/config.py"
# LitGPT's field for each config.json field its table states
LITGPT_FIELDS = {
    "hidden_size": "n_embd",
    "num_attention_heads": "n_head",
    "num_key_value_heads": "n_query_groups",
    "head_dim": "head_size",
    "num_hidden_layers": "n_layer",
    "intermediate_size": "intermediate_size",
    "vocab_size": "padded_vocab_size",  # the embedding's rows, as config.json's vocab_size counts
    "num_experts": "n_expert",
    "num_experts_per_tok": "n_expert_per_token",
    "moe_intermediate_size": "moe_intermediate_size",
}
# the dimensions two models must share for one to take the other's architecture: all of them but the
# vocabulary (a code or maths fine-tune may add tokens) and the routing's experts per token
MATCHED = tuple(field for field in LITGPT_FIELDS if field not in ("vocab_size", "num_experts_per_tok"))
TAKEN_FROM_MATCH = ("architectures", "model_type", "tie_word_embeddings", "hidden_act")
# architecture numbers compared between a hand entry and the wheel's copy
COMPARED = (
    "hidden_size",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "num_hidden_layers",
    "intermediate_size",
    "moe_intermediate_size",
    "vocab_size",
    "num_experts",
    "num_local_experts",
    "num_experts_per_tok",
    "max_position_embeddings",
    "tie_word_embeddings",
    "torch_dtype",
)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def obtain_wheel(version: str, cache: Path, package: str = "aiconfigurator") -> Path:
    """The cached wheel of package==version, downloaded with pip when absent."""
    stem = package.replace("-", "_")
    found = sorted(cache.glob(f"{stem}-{version}-*.whl"))
    if not found:
        log(f"pip download {package}=={version}")
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "-q",
                "--no-deps",
                f"{package}=={version}",
                "-d",
                str(cache),
            ],
            check=True,
        )
        found = sorted(cache.glob(f"{stem}-{version}-*.whl"))
    if not found:
        raise SystemExit(f"no wheel of {package}=={version} in {cache} after pip download")
    return found[0]


def wheel_source(version: str, wheel: Path, member: str) -> str:
    """The public reference of one file inside a wheel: the release page, the wheel and its sha256."""
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    return (
        f"aiconfigurator {version} (Apache-2.0), a Hugging Face config.json copy: {member} in {wheel.name} "
        f"(sha256 {digest}) — https://pypi.org/project/aiconfigurator/{version}/#files"
    )


def read_wheels(cache: Path) -> dict[str, dict[str, Any]]:
    """Hub id -> config, ModelOpt quantization file and source; a newer wheel replaces an older one."""
    models: dict[str, dict[str, Any]] = {}
    for version in VERSIONS:
        wheel = obtain_wheel(version, cache)
        with zipfile.ZipFile(wheel) as archive:
            names = set(archive.namelist())
            for member in sorted(names):
                if (
                    not member.startswith(PREFIX)
                    or not member.endswith(CONFIG_SUFFIX)
                    or member.endswith(QUANT_SUFFIX)
                ):
                    continue
                stem = member[len(PREFIX) : -len(CONFIG_SUFFIX)]
                organisation, _, name = stem.partition("--")
                quant_member = f"{PREFIX}{stem}{QUANT_SUFFIX}"
                models[f"{organisation}/{name}"] = {
                    "config": json.loads(archive.read(member)),
                    "hf_quant_config": json.loads(archive.read(quant_member))
                    if quant_member in names
                    else None,
                    "source": wheel_source(version, wheel, member),
                }
    return models


def sized_types() -> frozenset[str]:
    """Model types whose layout the parameter formula describes: its families and the hand catalog's types."""
    catalog = load_data("models.json")
    families = {value for family in catalog["architecture_families"].values() for value in family["values"]}
    return frozenset(families | {row["config"].get("model_type") for row in catalog["models"]})


def memory_not_estimated(config: dict[str, Any], known: frozenset[str]) -> str | None:
    """Why the memory model cannot size this checkpoint, or None when it can."""
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else {}
    model_type = str(text.get("model_type") or config.get("model_type"))
    layout = layout_not_modelled({**config, **text})
    if layout:
        return layout
    if "vision_config" in config:
        # vision-language models: vLLM's profile run includes the encoder (sizing/gpu.py _vision_unknown)
        return "the vision encoder's weights and profile-run activations are not in the parameter formula"
    if model_type not in known:
        return f"the memory model does not describe the {model_type} layout (parameters and KV cache)"
    # a checkpoint stored quantized is sized (or not) when it is judged: the backend and the method the
    # image's vLLM reads decide (lmi_config.shape.dimensions.unsized_checkpoint)
    return None


def hand_index() -> dict[str, dict[str, Any]]:
    """Hand catalog rows by every id and alias (lower case)."""
    index = {}
    for row in load_data("models.json")["models"]:
        for name in [row["model_id"], *row.get("aliases", [])]:
            index[name.lower()] = row
    return index


def disagreements(model_id: str, hand: dict[str, Any], wheel: dict[str, Any]) -> list[str]:
    """Every compared number where the hand entry and the wheel's verbatim config differ."""
    ours = {**hand["config"], **(hand["config"].get("text_config") or {})}
    theirs = {**wheel, **(wheel.get("text_config") or {})}
    theirs.setdefault("torch_dtype", theirs.get("dtype"))
    return [
        f"{model_id} (hand {hand['model_id']}): {key} hand={ours.get(key)!r} wheel={theirs.get(key)!r}"
        for key in COMPARED
        if key in theirs and key in ours and ours.get(key) != theirs.get(key)
    ]


def litgpt_models(cache: Path) -> tuple[list[dict[str, Any]], str]:
    """LitGPT's model table, each entry with its derived fields filled in by LitGPT's own ``Config``
    (the file is executed from the wheel, in a fresh module; it imports only the standard library,
    PyYAML and typing_extensions), and the wheel's public reference."""
    wheel = obtain_wheel(LITGPT_VERSION, cache, "litgpt")
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    with zipfile.ZipFile(wheel) as archive:
        code = archive.read(LITGPT_MEMBER).decode("utf-8")
    module = types.ModuleType("litgpt_config_from_wheel")
    sys.modules[module.__name__] = module  # dataclasses look their module up while building the class
    try:
        exec(compile(code, f"{wheel.name}/{LITGPT_MEMBER}", "exec"), module.__dict__)  # noqa: S102
    finally:
        del sys.modules[module.__name__]
    config_class = module.Config
    models = []
    for entry in module.configs:
        config = config_class(**entry)
        hub = config.hf_config or {}
        if not hub.get("org") or not hub.get("name"):
            continue
        fields = {name: getattr(config, field) for name, field in LITGPT_FIELDS.items()}
        if not fields["num_experts"]:
            fields.update(num_experts=None, num_experts_per_tok=None, moe_intermediate_size=None)
        # not taken: LitGPT's block_size, sliding window and rope are its own choices, not config.json's
        # (of the 125 models both have, 28 context or window figures differ: Qwen2.5-7B-Instruct 131,072
        # against config.json's 32,768, Mistral-7B-v0.1 4,096 against 32,768), so a context check would
        # judge against the wrong figure; the context stays unknown
        models.append({"model_id": f"{hub['org']}/{hub['name']}", "name": config.name, "fields": fields})
    where = f"{LITGPT_MEMBER} in {wheel.name} (sha256 {digest}) — https://pypi.org/project/litgpt/{LITGPT_VERSION}/#files"
    return models, where


def _dimensions(config: dict[str, Any]) -> dict[str, Any]:
    """The matched dimensions of a config.json, as LitGPT's table would state them."""
    arch = normalize_config(config, model_id="dimensions", source="config.json")
    return {
        "hidden_size": arch.hidden_size,
        "num_attention_heads": arch.num_attention_heads,
        "num_key_value_heads": arch.num_key_value_heads,
        "head_dim": arch.head_dim,
        "num_hidden_layers": arch.num_layers,
        "intermediate_size": arch.intermediate_size,
        "num_experts": arch.num_experts or None,
        "moe_intermediate_size": arch.moe_intermediate_size if arch.num_experts else None,
        "vocab_size": arch.vocab_size,
    }


def litgpt_rows(
    cache: Path, catalog: dict[str, tuple[str, dict[str, Any]]]
) -> tuple[list[dict[str, Any]], list[str]]:
    """Catalog rows from LitGPT's table for models no other source has and whose architecture a
    same-organisation, text-only catalog model with identical dimensions fixes; and the lines
    --compare prints (disagreements where both have a model, models left out and why).
    ``catalog``: (id, config) of every model the other sources give, by lower-case id or alias."""
    models, source = litgpt_models(cache)
    text_only = {
        name: (config, _dimensions(config), model_id)
        for name, (model_id, config) in catalog.items()
        if "vision_config" not in config and "text_config" not in config
    }
    rows, lines = [], []
    for model in models:
        model_id, fields = model["model_id"], model["fields"]
        wanted = {key: fields[key] for key in MATCHED}
        known = catalog.get(model_id.lower())
        if known is not None:
            theirs = _dimensions(known[1])
            lines += [
                f"{model_id}: {key} catalog={theirs[key]!r} litgpt={fields[key]!r}"
                for key in (*MATCHED, "vocab_size")
                if theirs[key] != fields[key]
            ]
            continue
        organisation = model_id.split("/")[0].lower()
        matches = sorted(
            other
            for other, (config, dimensions, _) in text_only.items()
            if other.split("/")[0] == organisation and {key: dimensions[key] for key in MATCHED} == wanted
        )
        architectures = {tuple(text_only[other][0].get("architectures") or ()) for other in matches}
        model_types = {text_only[other][0].get("model_type") for other in matches}
        if not matches or len(architectures) != 1 or len(model_types) != 1 or not next(iter(architectures)):
            why = (
                "no catalog model of its organisation has its dimensions"
                if not matches
                else (f"the models with its dimensions ({', '.join(matches)}) differ in architecture")
            )
            lines.append(f"{model_id}: left out (LitGPT's table gives no architecture; {why})")
            continue
        matched, _, match = text_only[matches[0]]
        config = {key: value for key, value in fields.items() if value is not None}
        config.update({key: matched[key] for key in TAKEN_FROM_MATCH if key in matched})
        rows.append(
            {
                "model_id": model_id,
                "config": dict(sorted(config.items())),
                "source": f"litgpt {LITGPT_VERSION} (Apache-2.0), entry {model['name']!r} of its model table: "
                f"its dimensions, LitGPT's field names translated to config.json's; {', '.join(TAKEN_FROM_MATCH)} "
                f"those of {match}, whose dimensions are identical; no dtype or context stated — {source}",
            }
        )
    return rows, lines


def _row(
    model_id: str, config: dict[str, Any], source: str, known: frozenset[str], quant: Any = None
) -> dict[str, Any] | str:
    """A catalog row, or why the model is left out."""
    try:
        arch = normalize_config(config, model_id=model_id, source=source)
    except ModelResolutionError as error:
        # a config the normalizer refuses would make every lint naming the model exit 2
        return f"{model_id}: left out, the normalizer refuses its config: {error}"
    reason = memory_not_estimated(config, known)
    params = arch.total_params if reason is None else None
    return {
        "model_id": model_id,
        "aliases": [],
        "config": config,
        "hf_quant_config": quant,
        "total_params": params,
        "params_source": "computed from the config by lmi_config.modelarch.estimate_params"
        if params
        else None,
        "memory_not_estimated": reason,
        "source": source,
    }


def build(cache: Path) -> tuple[dict[str, Any], list[str]]:
    """The generated document, and the disagreements with the hand catalog and the models left out."""
    known = sized_types()
    hand = hand_index()
    rows, differences = [], []
    catalog = {name: (row["model_id"], row["config"]) for name, row in hand.items()}
    for model_id, found in sorted(read_wheels(cache).items()):
        if model_id.lower() in hand:
            differences += disagreements(model_id, hand[model_id.lower()], found["config"])
            continue
        row = _row(model_id, found["config"], found["source"], known, found["hf_quant_config"])
        if isinstance(row, str):
            differences.append(row)
            continue
        rows.append(row)
        catalog[model_id.lower()] = (model_id, found["config"])
    derived, lines = litgpt_rows(cache, catalog)
    differences += lines
    for found in derived:
        row = _row(found["model_id"], found["config"], found["source"], known)
        if isinstance(row, str):
            differences.append(row)
        else:
            rows.append({**row, "config_verbatim": False})  # no dtype, auto_map or context stated
    document = {
        "source": "generated by scripts/gen_model_catalog.py from the model_configs of the aiconfigurator wheels "
        f"{', '.join(VERSIONS)} (newest wheel wins) — https://pypi.org/project/aiconfigurator/ — and, for "
        f"models neither they nor models.json have, the model table of litgpt {LITGPT_VERSION} where a "
        "catalog model with identical dimensions fixes the architecture — "
        f"https://pypi.org/project/litgpt/{LITGPT_VERSION}/",
        "models": sorted(rows, key=lambda row: row["model_id"]),
    }
    return document, differences


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache-dir", default=str(DEFAULT_CACHE), help="wheel cache (default: %(default)s)")
    parser.add_argument("--check", action="store_true", help="compare with the committed file; write nothing")
    parser.add_argument(
        "--compare", action="store_true", help="print disagreements with models.json, models left out"
    )
    args = parser.parse_args(argv)
    cache = Path(args.cache_dir)
    cache.mkdir(parents=True, exist_ok=True)
    document, differences = build(cache)
    text = json.dumps(document, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    if args.compare:
        for line in differences:
            print(line)
    if args.check:
        same = OUTPUT.read_text(encoding="utf-8") == text
        print("up to date" if same else f"{OUTPUT} differs from what the wheels give: rerun without --check")
        return 0 if same else 1
    OUTPUT.write_text(text, encoding="utf-8")
    sized = sum(1 for row in document["models"] if row["total_params"])
    print(
        f"wrote {OUTPUT}: {len(document['models'])} models ({sized} sized), {len(differences)} disagreements with models.json or models left out (--compare lists them)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
