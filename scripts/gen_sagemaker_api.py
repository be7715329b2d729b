#!/usr/bin/env python3
"""Generate lmi_config/data/sagemaker_api.json from botocore's SageMaker service model.

``lmi-config deploy`` checks every SageMaker limit before its first call, because neither
botocore (types, required fields and minimums only) nor a test server checks the maximums and
patterns. The limits are the service model's own (``botocore/data/sagemaker/2017-07-24/
service-2.json``): name lengths and patterns, the Environment map (entries, key and value
lengths, key pattern, and the 32 KB total its documentation states), the variant's timeouts,
volume size and instance count, the instance types a variant accepts, the inference AMIs (with
the driver versions their documentation lists), tags, the role ARN; and the endpoint waiter's
delay and attempts (``waiters-2.json``).

Stdlib only; deterministic.

    python scripts/gen_sagemaker_api.py --botocore .venv/lib/python3.11/site-packages/botocore
"""

from __future__ import annotations

import argparse
import gzip
import html
import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "lmi_config" / "data" / "sagemaker_api.json"
SERVICE = "sagemaker/2017-07-24"

NAMES = {
    "model_name": "ModelName",
    "endpoint_name": "EndpointName",
    "endpoint_config_name": "EndpointConfigName",
    "variant_name": "VariantName",
}
VARIANT_INTEGERS = {
    "container_startup_health_check_timeout_seconds": "ContainerStartupHealthCheckTimeoutInSeconds",
    "model_data_download_timeout_seconds": "ModelDataDownloadTimeoutInSeconds",
    "volume_size_gb": "VolumeSizeInGB",
    "initial_instance_count": "InitialInstanceCount",
}


def read_model(botocore: Path, name: str) -> dict[str, Any]:
    base = botocore / "data" / SERVICE
    plain, packed = base / name, base / (name + ".gz")
    if plain.exists():
        return dict(json.loads(plain.read_text(encoding="utf-8")))
    with gzip.open(packed, "rt", encoding="utf-8") as handle:
        return dict(json.load(handle))


def bounds(shape: dict[str, Any]) -> dict[str, Any]:
    """min / max / pattern of a shape, as the model states them."""
    return {key: shape[key] for key in ("min", "max", "pattern") if key in shape}


def text_of(documentation: str) -> str:
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", documentation))).strip()


def inference_amis(shapes: dict[str, Any]) -> list[dict[str, Any]]:
    """Each AMI of ProductionVariantInferenceAmiVersion with what its documentation says it has."""
    names = shapes["ProductionVariantInferenceAmiVersion"]["enum"]
    documentation = text_of(shapes["ProductionVariant"]["members"]["InferenceAmiVersion"]["documentation"])
    amis = []
    for name in sorted(names):
        start = documentation.find(name + " ")
        following = [documentation.find(other + " ", start + 1) for other in names if other != name]
        end = min([position for position in following if position > start] or [len(documentation)])
        part = documentation[start:end] if start >= 0 else ""
        accelerator = re.search(r"Accelerator: (.+?)(?= (?:NVIDIA|Neuron|CUDA) |$)", part)
        nvidia = re.search(r"NVIDIA driver version: ([\d.]+)", part)
        cuda = re.search(r"CUDA (?:driver )?version: ([\d.]+)", part)
        neuron = re.search(r"Neuron driver version: ([\d.]+)", part)
        amis.append(
            {
                "name": name,
                "accelerator": "neuron" if "neuron" in name else "gpu",
                "accelerator_text": accelerator.group(1).strip() if accelerator else None,
                "nvidia_driver": nvidia.group(1) if nvidia else None,
                "cuda": cuda.group(1) if cuda else None,
                "neuron_driver": neuron.group(1) if neuron else None,
            }
        )
    return amis


def environment_limits(shapes: dict[str, Any]) -> dict[str, Any]:
    environment = shapes["EnvironmentMap"]
    documentation = text_of(shapes["ContainerDefinition"]["members"]["Environment"]["documentation"])
    total = re.search(r"all keys and values in the map, combined, is (\d+) KB", documentation)
    return {
        "max_entries": environment["max"],
        "key": bounds(shapes[environment["key"]["shape"]]),
        "value": bounds(shapes[environment["value"]["shape"]]),
        "total_max_bytes": int(total.group(1)) * 1024 if total else None,
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--botocore", type=Path, required=True, help="the botocore package directory")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    arguments = parser.parse_args()

    version_match = re.search(
        r"__version__ = '([^']+)'", (arguments.botocore / "__init__.py").read_text(encoding="utf-8")
    )
    version = version_match.group(1) if version_match else "unknown"
    model = read_model(arguments.botocore, "service-2.json")
    waiters = read_model(arguments.botocore, "waiters-2.json")["waiters"]
    shapes = model["shapes"]
    variant = shapes["ProductionVariant"]["members"]
    url = f"https://github.com/boto/botocore/blob/{version}/botocore/data/{SERVICE}"
    source = f"generated by scripts/gen_sagemaker_api.py from botocore {version} — {url}/service-2.json"
    waiter = waiters["EndpointInService"]
    table = {
        "source": source,
        "botocore_version": version,
        "names": {key: {**bounds(shapes[shape]), "shape": shape} for key, shape in NAMES.items()},
        "environment": environment_limits(shapes),
        "variant": {
            key: bounds(shapes[variant[member]["shape"]]) for key, member in VARIANT_INTEGERS.items()
        },
        "instance_types": sorted(shapes["ProductionVariantInstanceType"]["enum"]),
        "inference_amis": inference_amis(shapes),
        "tags": {
            "max_count": shapes["TagList"]["max"],
            "key": bounds(shapes["TagKey"]),
            "value": bounds(shapes["TagValue"]),
        },
        "role_arn": bounds(shapes["RoleArn"]),
        "s3_uri": bounds(shapes["S3ModelUri"]),
        "endpoint_waiter": {
            "delay_seconds": waiter["delay"],
            "max_attempts": waiter["maxAttempts"],
            "source": f"generated by scripts/gen_sagemaker_api.py from botocore {version} — {url}/waiters-2.json",
        },
    }
    arguments.output.write_text(json.dumps(table, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(
        f"{arguments.output}: limits from botocore {version}, {len(table['instance_types'])} instance types"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
