"""The generators behind the container checks, on small inputs written here (no clone, no network).

scripts/gen_image_pins.py reads Dockerfiles and handler tables, scripts/gen_transformers_model_types.py
a transformers wheel, scripts/gen_vllm_limits.py vLLM's sources; their output files are checked in
and validated by test_data_schemas.py.
"""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

from conftest import ROOT

sys.path.insert(0, str(ROOT / "scripts"))

from gen_image_pins import dockerfile_pins, neuron_model_types  # noqa: E402
from gen_transformers_model_types import model_types, pipeline_tasks  # noqa: E402
from gen_vllm_limits import lora_ranks  # noqa: E402

DOCKERFILE = """\
ARG version=12.4.1-devel-ubuntu22.04
ARG python_version=3.10
ARG djl_version
ARG transformers_version=4.45.2
ARG transformers_neuronx_version=0.13.380
ARG neuronsdk_version=2.21.1
ARG vllm_wheel="https://publish.djl.ai/vllm/cu124-pt240/vllm-0.6.2%2Bcu124-cp310-cp310-linux_x86_64.whl"
RUN pip install transformers==${transformers_version}
"""
REQUIREMENTS = """\
torch==2.11.0
transformers >= 4.56.0, <= 5.9.0, != 5.0.*
https://wheels.vllm.ai/dc6b578/vllm-0.17.0rc1.dev168%2Bgdc6b57846-cp38-abi3-manylinux_2_31_x86_64.whl
sentence_transformers
"""


def test_a_dockerfile_gives_its_version_args_and_wheel_versions() -> None:
    pins, ranges, line = dockerfile_pins(DOCKERFILE, None)
    assert pins == {
        "transformers": "4.45.2",
        "transformers-neuronx": "0.13.380",
        "neuron-sdk": "2.21.1",
        "vllm": "0.6.2",
    }
    assert ranges == {} and line == 4  # the line of the transformers pin, for the source URL


def test_a_requirements_file_gives_exact_pins_ranges_and_wheels() -> None:
    pins, ranges, _line = dockerfile_pins("", REQUIREMENTS)
    assert pins == {"torch": "2.11.0", "vllm": "0.17.0rc1.dev168"}
    assert ranges == {"transformers": ">= 4.56.0, <= 5.9.0, != 5.0.*"}


def test_the_neuron_handler_tables_are_read_from_the_code() -> None:
    text = (
        'OPTIMUM_CAUSALLM_MODEL_TYPES = {"gpt2", "llama"}\n'
        "class TNXModelLoader:\n"
        '    MODEL_TYPE_TO_CLS_LOADER = {"opt": "opt.model.OPTForSampling", "mixtral": "m.M"}\n'
    )
    found = neuron_model_types(text)
    assert found["optimum"] == (["gpt2", "llama"], 1)
    assert found["tnx"] == (["mixtral", "opt"], 3)


def test_model_types_and_tasks_come_from_the_wheel(tmp_path: Path) -> None:
    wheel = tmp_path / "transformers-9.9.9-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(
            "transformers/models/auto/configuration_auto.py",
            'CONFIG_MAPPING_NAMES = OrderedDict([("qwen3", "Qwen3Config"), ("llama", "LlamaConfig")])\n',
        )
        archive.writestr(
            "transformers/pipelines/__init__.py",
            'TASK_ALIASES = {"ner": "token-classification"}\nSUPPORTED_TASKS = {"text-generation": {}}\n',
        )
    assert model_types(wheel) == ["llama", "qwen3"]
    assert pipeline_tasks(wheel) == ["ner", "text-generation"]


def test_lora_ranks_in_both_forms_vllm_wrote_them() -> None:
    old = {
        "vllm/config.py": "class LoRAConfig:\n    def f(self):\n        possible_max_ranks = (8, 16, 32)\n"
    }
    new = {"vllm/config/lora.py": "MaxLoRARanks = Literal[1, 8, 16]\n"}
    assert lora_ranks(old) == ([8, 16, 32], "vllm/config.py", False)
    assert lora_ranks(new) == ([1, 8, 16], "vllm/config/lora.py", True)
