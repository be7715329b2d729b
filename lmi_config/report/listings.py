"""Text and JSON for the listing commands: models, instances and rules."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lmi_config.rules.base import Rule
from lmi_config.strict_json import dump_json


def model_rows() -> list[dict[str, Any]]:
    """The built-in catalog, one row per model."""
    from lmi_config.knowledge.models import catalog_rows
    from lmi_config.modelarch import from_catalog

    rows = []
    for row in catalog_rows():
        arch = from_catalog(row["model_id"])
        if arch is None:
            continue
        rows.append(
            {
                "model_id": arch.model_id,
                "aliases": row.get("aliases", []),
                # a layout the formula does not cover has no parameter count rather than a wrong one
                "parameters": None if arch.memory_not_estimated else arch.total_params,
                "heads": arch.num_attention_heads,
                "kv_heads": arch.num_key_value_heads,
                "layers": arch.num_layers,
                "max_position_embeddings": arch.max_position_embeddings,
                "experts": arch.num_experts,
                "source": row["source"],
            }
        )
    return rows


def format_models(rows: list[dict[str, Any]]) -> str:
    lines = [f"{'model':<48} {'params':>8} {'heads':>5} {'kv':>3} {'layers':>6} {'max len':>8}"]
    for item in rows:
        experts = f"  ({item['experts']} experts)" if item["experts"] else ""
        lines.append(
            f"{item['model_id']:<48} {_billions(item['parameters']):>8} {item['heads']:>5} {item['kv_heads']:>3} "
            f"{item['layers']:>6} {item['max_position_embeddings'] or '-':>8}{experts}"
        )
    return "\n".join(lines) + "\n"


def _billions(parameters: int | None) -> str:
    return f"{parameters / 1e9:.2f}B" if parameters else "-"


def instance_rows() -> list[dict[str, Any]]:
    """The instance types the checks know."""
    from lmi_config.knowledge.instances import instances

    return [
        {
            "instance_type": item.instance_type,
            "accelerator": item.accelerator,
            "accelerator_name": item.accelerator_name,
            "cores_or_gpus": item.num_cores,
            "memory_per_core_gib": round(item.memory_per_core_bytes / 2**30, 2) if item.num_cores else 0,
            "host_memory_gib": item.host_memory_gib,
            "source": item.source,
        }
        for item in instances().values()
    ]


def format_instances(rows: list[dict[str, Any]]) -> str:
    lines = [f"{'instance':<18} {'accelerator':<22} {'cores/GPUs':>10} {'GiB each':>9} {'host GiB':>9}"]
    for row in rows:
        accelerator = f"{row['accelerator_name']} ({row['accelerator']})"
        lines.append(
            f"{row['instance_type']:<18} {accelerator:<22} {row['cores_or_gpus']:>10} "
            f"{row['memory_per_core_gib']:>9} {row['host_memory_gib'] or '-':>9}"
        )
    return "\n".join(lines) + "\n"


def rule_dict(item: Rule) -> dict[str, object]:
    """A rule as data (``lmi-config rules --format json``)."""
    return {
        "code": item.code,
        "rule": item.slug,
        "severity": item.severity,
        "summary": item.summary,
        "why": item.why,
        "bad": {
            "text": item.bad.text,
            "kind": item.bad.kind,
            "args": dict(item.bad.args),
            "paired_env": item.bad.paired_env,
        },
        "good": {
            "text": item.good.text,
            "kind": item.good.kind,
            "args": dict(item.good.args),
            "paired_env": item.good.paired_env,
        },
        "source": item.source,
    }


def format_rule_list(rules: tuple[Rule, ...], output_format: str) -> str:
    if output_format == "json":
        return dump_json([rule_dict(item) for item in rules])
    return "".join(f"{item.code}  {item.slug:<28} {item.severity:<8} {item.summary}\n" for item in rules)


def _args_text(args: Mapping[str, str]) -> str:
    if not args:
        return ""
    return " with " + " ".join(f"--{key.replace('_', '-')} {value}" for key, value in args.items())


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.rstrip("\n").splitlines()) + "\n"


def format_rule(found: Rule, output_format: str) -> str:
    """One rule as ruff shows one: what it does, why, a bad and a good example, the source."""
    if output_format == "json":
        return dump_json(rule_dict(found))
    parts = [
        f"{found.code} {found.slug} ({found.severity})\n\n",
        f"What it does\n  {found.summary}\n\n",
        f"Why it matters\n  {found.why}\n\n",
        f"Example ({found.bad.kind}, reported){_args_text(found.bad.args)}\n",
        _indent(found.bad.text) + "\n",
    ]
    if found.bad.paired_env:
        parts.append("  with the env file\n" + _indent(found.bad.paired_env) + "\n")
    parts += [f"Use instead{_args_text(found.good.args)}\n", _indent(found.good.text) + "\n"]
    if found.good.paired_env:
        parts.append("  with the env file\n" + _indent(found.good.paired_env) + "\n")
    parts.append(f"Source\n  {found.source}\n")
    return "".join(parts)
