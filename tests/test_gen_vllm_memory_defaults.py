"""scripts/gen_vllm_memory_defaults.py on small sources: the KV cache dtype a release takes from a
ModelOpt checkpoint under kv_cache_dtype=auto."""

from __future__ import annotations

import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT / "scripts"))

import gen_vllm_memory_defaults as generator  # noqa: E402

ARG_UTILS = """
from vllm.utils.torch_utils import resolve_kv_cache_dtype_string

def create_engine_config(self):
    resolved_cache_dtype = resolve_kv_cache_dtype_string(
        self.kv_cache_dtype, model_config
    )
"""
TORCH_UTILS = """
import torch

MODELOPT_TO_VLLM_KV_CACHE_DTYPE_MAP = {
    "fp8": "fp8_e4m3",
    "nvfp4": "nvfp4",
}
"""


def test_the_checkpoint_kv_cache_dtypes_come_from_the_map_the_engine_arguments_resolve_through() -> None:
    sources = {"vllm/engine/arg_utils.py": ARG_UTILS, "vllm/utils/torch_utils.py": TORCH_UTILS}
    found = generator.checkpoint_kv_cache_dtypes(sources, "0.23.0")
    assert found is not None and found["value"] == {"fp8": "fp8_e4m3", "nvfp4": "nvfp4"}
    assert (
        "vllm/engine/arg_utils.py#L5" in found["source"] and "vllm/utils/torch_utils.py#L4" in found["source"]
    )
    # the map alone, without the call (a release that defines it but keeps auto the model's dtype): none
    assert generator.checkpoint_kv_cache_dtypes({"vllm/utils/torch_utils.py": TORCH_UTILS}, "0.13.0") is None
