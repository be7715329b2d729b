"""Application Auto Scaling for the endpoint's variant: target tracking on invocations per instance
(a real-time endpoint), or on the queue (an asynchronous one), down to zero instances.

An asynchronous endpoint tracks ``ApproximateBacklogSizePerInstance``; with a minimum of 0, target
tracking alone never brings the first instance back (there is no instance to divide the backlog
by), so a step scaling policy adds one when a CloudWatch alarm on ``HasBacklogWithoutCapacity``
fires (``sagemaker_api.json`` ``facts``; the numbers are ``deploy.json``'s policy). The alarm is
deploy's (tagged, removed with the endpoint); the policies go with the scalable target.
"""

from __future__ import annotations

from lmi_config.deploy.plan import ApiCall, Reference
from lmi_config.knowledge.sagemaker import deploy_policy
from lmi_config.knowledge.sagemaker_requests import async_scaling_policy, sagemaker_fact

DIMENSION = "sagemaker:variant:DesiredInstanceCount"


def target_of(endpoint_name: str, variant_name: str) -> dict[str, str]:
    return {
        "ServiceNamespace": "sagemaker",
        "ResourceId": f"endpoint/{endpoint_name}/variant/{variant_name}",
        "ScalableDimension": DIMENSION,
    }


def from_zero_alarm_name(endpoint_name: str) -> str:
    """The CloudWatch alarm deploy makes to bring an asynchronous endpoint back from zero."""
    return f"{endpoint_name}-backlog-without-capacity"


def scaling_calls(
    endpoint_name: str,
    variant_name: str,
    bounds: tuple[int, int],
    target_value: float | None,
    *,
    asynchronous: bool,
    tags: list[dict[str, str]],
) -> list[ApiCall]:
    """Register the variant, then its policies (and, from zero, the alarm that triggers the first instance)."""
    target = target_of(endpoint_name, variant_name)
    resource = target["ResourceId"]
    calls = [
        ApiCall(
            "application-autoscaling",
            "register_scalable_target",
            {**target, "MinCapacity": bounds[0], "MaxCapacity": bounds[1]},
            "let Application Auto Scaling change the instance count",
            ("scalable-target", resource),
        )
    ]
    if not asynchronous:
        policy = deploy_policy()
        calls.append(
            ApiCall(
                "application-autoscaling",
                "put_scaling_policy",
                {
                    **target,
                    "PolicyName": f"{endpoint_name}-invocations",
                    "PolicyType": "TargetTrackingScaling",
                    "TargetTrackingScalingPolicyConfiguration": {
                        "TargetValue": target_value or policy.autoscaling_target,
                        "PredefinedMetricSpecification": {"PredefinedMetricType": policy.autoscaling_metric},
                        "ScaleInCooldown": policy.scale_in_cooldown_seconds,
                        "ScaleOutCooldown": policy.scale_out_cooldown_seconds,
                    },
                },
                "target tracking on invocations per instance",
                ("scaling-policy", f"{resource}|{endpoint_name}-invocations"),
            )
        )
        return calls
    fact = sagemaker_fact("async_scaling").values
    backlog = async_scaling_policy()
    dimensions = [{"Name": "EndpointName", "Value": endpoint_name}]
    backlog_policy = f"{endpoint_name}-backlog"
    calls.append(
        ApiCall(
            "application-autoscaling",
            "put_scaling_policy",
            {
                **target,
                "PolicyName": backlog_policy,
                "PolicyType": "TargetTrackingScaling",
                "TargetTrackingScalingPolicyConfiguration": {
                    "TargetValue": target_value or backlog.target_backlog_per_instance,
                    "CustomizedMetricSpecification": {
                        "MetricName": fact["metric"],
                        "Namespace": fact["namespace"],
                        "Dimensions": dimensions,
                        "Statistic": "Average",
                    },
                    "ScaleInCooldown": backlog.scale_in_cooldown_seconds,
                    "ScaleOutCooldown": backlog.scale_out_cooldown_seconds,
                },
            },
            "target tracking on the queue: requests waiting per instance",
            ("scaling-policy", f"{resource}|{backlog_policy}"),
        )
    )
    if bounds[0] > 0:
        return calls
    from_zero = f"{endpoint_name}-from-zero"
    alarm = from_zero_alarm_name(endpoint_name)
    calls.append(
        ApiCall(
            "application-autoscaling",
            "put_scaling_policy",
            {
                **target,
                "PolicyName": from_zero,
                "PolicyType": "StepScaling",
                "StepScalingPolicyConfiguration": {
                    "AdjustmentType": "ChangeInCapacity",
                    "MetricAggregationType": "Average",
                    "Cooldown": backlog.step_cooldown_seconds,
                    "StepAdjustments": [{"MetricIntervalLowerBound": 0, "ScalingAdjustment": 1}],
                },
            },
            "step scaling: the first instance when requests wait and none runs",
            ("scaling-policy", f"{resource}|{from_zero}"),
            returns=from_zero,
        )
    )
    calls.append(
        ApiCall(
            "cloudwatch",
            "put_metric_alarm",
            {
                "AlarmName": alarm,
                "AlarmDescription": f"lmi-config: scale {endpoint_name} out from zero instances when requests wait",
                "ActionsEnabled": True,
                "AlarmActions": [Reference(from_zero, "PolicyARN")],
                "MetricName": fact["from_zero_metric"],
                "Namespace": fact["namespace"],
                "Dimensions": dimensions,
                "Statistic": "Average",
                "Period": backlog.alarm_period_seconds,
                "EvaluationPeriods": backlog.alarm_evaluation_periods,
                "Threshold": 1.0,
                "ComparisonOperator": "GreaterThanOrEqualToThreshold",
                "TreatMissingData": "missing",
                "Tags": tags,
            },
            "the alarm that triggers it (HasBacklogWithoutCapacity)",
            ("alarm", alarm),
        )
    )
    return calls


def describe_scaling(bounds: tuple[int, int], target_value: float | None, asynchronous: bool) -> str:
    if not asynchronous:
        target = target_value or deploy_policy().autoscaling_target
        return f"{bounds[0]} to {bounds[1]} instances (target tracking: {target:g} invocations per instance per minute)"
    target = target_value or async_scaling_policy().target_backlog_per_instance
    text = f"{bounds[0]} to {bounds[1]} instances (target tracking: {target:g} queued requests per instance)"
    if bounds[0] == 0:
        text += "; from zero: a step policy and the HasBacklogWithoutCapacity alarm add the first instance"
    return text
