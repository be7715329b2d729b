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

``requests`` holds, for every call ``deploy`` makes with the production options (VPC, network
isolation, KMS keys, data capture, asynchronous inference, inference components, blue/green
updates, serverless, and the Application Auto Scaling and CloudWatch calls of scaling to zero),
the input shapes of the members it sends, as the service models state them: types, required
members, lengths, value ranges, patterns and enums; ``lmi_config.deploy.request_limits`` checks
each planned call against them. ``facts`` are what the service models' documentation says and
their shapes do not (each with its source).

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


# The members each call sends (every member of a structure below them is kept): what deploy may
# put in a request. Service name -> botocore data directory, operation -> members.
REQUESTS: dict[str, tuple[str, dict[str, tuple[str, ...]]]] = {
    "sagemaker": (
        SERVICE,
        {
            "CreateModel": (
                "ModelName", "ExecutionRoleArn", "PrimaryContainer", "Tags", "VpcConfig", "EnableNetworkIsolation",
            ),
            "CreateEndpointConfig": (
                "EndpointConfigName", "ProductionVariants", "DataCaptureConfig", "Tags", "KmsKeyId",
                "AsyncInferenceConfig", "ExecutionRoleArn", "VpcConfig", "EnableNetworkIsolation",
            ),
            "CreateEndpoint": ("EndpointName", "EndpointConfigName", "Tags"),
            "UpdateEndpoint": ("EndpointName", "EndpointConfigName", "DeploymentConfig"),
            "CreateInferenceComponent": (
                "InferenceComponentName", "EndpointName", "VariantName", "Specification", "RuntimeConfig", "Tags",
            ),
        },
    ),
    "application-autoscaling": (
        "application-autoscaling/2016-02-06",
        {
            "RegisterScalableTarget": (
                "ServiceNamespace", "ResourceId", "ScalableDimension", "MinCapacity", "MaxCapacity",
            ),
            "PutScalingPolicy": (
                "PolicyName", "ServiceNamespace", "ResourceId", "ScalableDimension", "PolicyType",
                "StepScalingPolicyConfiguration", "TargetTrackingScalingPolicyConfiguration",
            ),
        },
    ),
    "cloudwatch": (
        "cloudwatch/2010-08-01",
        {
            "PutMetricAlarm": (
                "AlarmName", "AlarmDescription", "ActionsEnabled", "AlarmActions", "MetricName", "Namespace",
                "Statistic", "Dimensions", "Period", "EvaluationPeriods", "Threshold", "ComparisonOperator",
                "TreatMissingData", "Tags",
            ),
        },
    ),
}  # fmt: skip
_CONSTRAINTS = ("min", "max", "pattern", "enum")

# What the service documentation states and no shape carries, each with its page.
STATED = {
    "serverless": {
        "accelerators": [],
        "unsupported": [
            "GPUs", "VPC configuration", "network isolation", "data capture", "multiple production variants",
        ],
        "statement": "Serverless Inference runs on CPU only: GPUs, VPC configuration, network isolation and data "
        "capture are among the features of real-time inference it does not support.",
        "source": "https://docs.aws.amazon.com/sagemaker/latest/dg/serverless-endpoints.html",
    },
    "inference_component_accelerators": {
        "unit": "device",
        "statement": "NumberOfAcceleratorDevicesRequired counts accelerator devices (the documentation: "
        "'Accelerators include GPUs and Amazon Web Services Inferentia'): a GPU, or a Neuron device "
        "(an Inferentia2 or Trainium chip, whose NeuronCores the container's tensor parallelism counts).",
        "source": "InferenceComponentComputeResourceRequirements.NumberOfAcceleratorDevicesRequired, "
        "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_InferenceComponentComputeResourceRequirements.html",
    },
    "async_scaling": {
        "metric": "ApproximateBacklogSizePerInstance",
        "from_zero_metric": "HasBacklogWithoutCapacity",
        "namespace": "AWS/SageMaker",
        "statement": "An asynchronous endpoint scales to zero instances with a scalable target of MinCapacity 0 and "
        "target tracking on ApproximateBacklogSizePerInstance; target tracking cannot scale out from zero "
        "(there is no instance to divide the backlog by), so a step scaling policy triggered by a "
        "CloudWatch alarm on HasBacklogWithoutCapacity adds the first instance.",
        "source": "https://docs.aws.amazon.com/sagemaker/latest/dg/async-inference-autoscale.html",
    },
    "blue_green": {
        "same_variant_name": True,
        "statement": "A blue/green update needs the new endpoint config to have the same variant names as the old one.",
        "source": "https://docs.aws.amazon.com/sagemaker/latest/dg/deployment-guardrails-exclusions.html",
    },
}  # fmt: skip


def read_model(botocore: Path, name: str, service: str = SERVICE) -> dict[str, Any]:
    base = botocore / "data" / service
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


def request_shapes(botocore: Path) -> dict[str, Any]:
    """The input shapes of the members deploy sends, per service (``service.Shape`` names)."""
    operations: dict[str, Any] = {}
    shapes: dict[str, Any] = {}
    for service, (directory, calls) in REQUESTS.items():
        model = read_model(botocore, "service-2.json", directory)
        known = model["shapes"]

        def walk(name: str, known: dict[str, Any] = known, service: str = service) -> str:
            qualified = f"{service}.{name}"
            if qualified in shapes:
                return qualified
            shape = known[name]
            row: dict[str, Any] = {"type": shape["type"]}
            row.update({key: shape[key] for key in _CONSTRAINTS if key in shape})
            shapes[qualified] = row  # before the members: shapes may refer to themselves
            if shape["type"] == "structure":
                row["required"] = list(shape.get("required", []))
                row["members"] = {member: walk(item["shape"]) for member, item in shape["members"].items()}
            elif shape["type"] == "list":
                row["member"] = walk(shape["member"]["shape"])
            elif shape["type"] == "map":
                row["key"] = walk(shape["key"]["shape"])
                row["value"] = walk(shape["value"]["shape"])
            return qualified

        for operation, members in calls.items():
            input_shape = model["operations"][operation]["input"]["shape"]
            definition = known[input_shape]
            missing = [member for member in members if member not in definition["members"]]
            if missing:
                raise SystemExit(f"{service}.{operation}: the service model has no {', '.join(missing)}")
            operations[f"{service}.{operation}"] = {
                "required": [member for member in definition.get("required", []) if member in members],
                "members": {member: walk(definition["members"][member]["shape"]) for member in members},
            }
    return {"operations": operations, "shapes": dict(sorted(shapes.items()))}


def documented_facts(shapes: dict[str, Any]) -> dict[str, Any]:
    """What the SageMaker model's documentation says beside its shapes, with the sentences quoted."""
    documentation = text_of(shapes["CreateEndpointConfigInput"]["members"]["KmsKeyId"]["documentation"])
    local = re.search(
        r"Certain Nitro-based instances include local storage[^.]*\.(?:[^.]*\.){0,3}", documentation
    )
    return {
        "volume_kms_key": {
            "instance_storage": local.group(0).strip() if local else None,
            "source": "CreateEndpointConfig.KmsKeyId documentation in the service model",
        }
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
    requests = request_shapes(arguments.botocore)
    services = {service: directory for service, (directory, _) in REQUESTS.items()}
    facts = {
        **documented_facts(shapes),
        **{key: dict(value) for key, value in STATED.items()},
    }
    facts["volume_kms_key"]["source"] = f"{facts['volume_kms_key']['source']} ({source})"
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
        "requests": {
            "source": f"generated by scripts/gen_sagemaker_api.py from botocore {version} — "
            + " ".join(
                f"https://github.com/boto/botocore/blob/{version}/botocore/data/{directory}/service-2.json"
                for directory in services.values()
            ),
            **requests,
        },
        "facts": facts,
    }
    arguments.output.write_text(json.dumps(table, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(
        f"{arguments.output}: limits from botocore {version}, {len(table['instance_types'])} instance types, "
        f"{len(requests['operations'])} requests ({len(requests['shapes'])} shapes)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
