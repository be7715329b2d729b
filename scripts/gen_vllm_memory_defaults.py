#!/usr/bin/env python3
"""Generate the ``versions`` section of lmi_config/data/vllm_memory.json from vLLM's sources.

How much KV cache vLLM allocates depends on code that changed from release to release:
how the start-up profiler counts memory (``determine_num_available_blocks`` /
``determine_available_memory``), the default ``max_num_batched_tokens`` with and without
chunked prefill, when chunked prefill switches itself on, the default block size, the
largest CUDA-graph capture batch, whether CUDA-graph memory is inside the budget, and the KV
cache dtype ``kv_cache_dtype=auto`` takes from a ModelOpt checkpoint (0.14+). This
script reads those facts from each vLLM release's source distribution -- the same archives
``scripts/gen_vllm_engine_args.py`` uses (PyPI sdists, a wheel where a release has none;
vllm is never installed or imported) -- and records, for each fact, the value, the file and
line it comes from and a public URL to that line at the release tag.

Only the ``versions`` key of the data file is rewritten; the hand-written constants beside
it (non-torch memory, GPU memory PyTorch sees, ...) are kept as they are. Stdlib only,
deterministic output.

Run: python scripts/gen_vllm_memory_defaults.py [--cache-dir DIR] [VERSION ...]
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
import tarfile
import tempfile
import urllib.request
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gen_vllm_engine_args as engine_args  # noqa: E402  (the sibling generator: archive download and reading)

REPO_ROOT = Path(__file__).resolve().parent.parent
DATA_FILE = REPO_ROOT / "lmi_config" / "data" / "vllm_memory.json"

# The versions LMI images ship (releases.json) plus the ones the logged start-ups in
# ../shared/reference/vllm_kv_cases.json ran, so the benchmark judges each log by its own code.
VERSIONS = {
    "0.2.4": None,
    "0.2.5": None,
    "0.2.7": None,
    "0.3.3": None,
    "0.4.1": None,
    "0.4.2": "LMI v10 (DJL 0.28.0)",
    "0.5.3.post1": "LMI v11 (DJL 0.29.0)",
    "0.6.2": "LMI v12 (DJL 0.30.0)",
    "0.6.3.post1": "LMI v13 (DJL 0.31.0)",
    "0.6.4.post1": None,
    "0.6.5": None,
    "0.7.1": None,
    "0.7.3": "LMI v14 (DJL 0.32.0)",
    "0.8.4": "LMI v15 (DJL 0.33.0)",
    "0.9.2": None,
    "0.10.1.1": None,
    "0.10.2": "LMI v16 (DJL 0.34.0)",
    "0.11.1": "LMI v17 (DJL 0.35.0)",
    "0.12.0": "LMI v18",
    "0.14.0": "LMI v19",
    "0.15.1": "LMI v20",
    "0.21.0": None,
    "0.23.0": "LMI v27",
}

V0_WORKER = "vllm/worker/worker.py"
V1_WORKER = "vllm/v1/worker/gpu_worker.py"
WORKER_FUNCTIONS = (
    "determine_available_memory",
    "determine_num_available_blocks",
    "profile_num_available_blocks",
)

# How the profiler counts memory, recognised by the expression that computes the peak. Order matters:
# the first marker found names the scheme. Meaning of each scheme: lmi_config/sizing/gpu.py.
PROFILER_MARKERS = (
    ("since_init_snapshot", r"memory_profiling\("),
    ("torch_peak_plus_device_non_torch", r"non_torch_allocations"),
    ("free_memory_since_init", r"peak_memory = self\.init_gpu_memory - free_gpu_memory"),
    ("device_used", r"peak_memory = total_gpu_memory - free_gpu_memory"),
    ("torch_allocated_peak", r"peak_memory = torch\.cuda\.max_memory_allocated\(\)"),
)

FACTS: dict[str, tuple[tuple[str, str], ...]] = {
    # chunked prefill turns itself on above this max_model_len (V0, arg_utils)
    "long_context_threshold": (
        ("vllm/engine/arg_utils.py", r"use_long_context = (?:model_config\.|self\.)?max_model_len > (\d+)"),
    ),
    # without chunked prefill: max_num_batched_tokens = max(max_model_len, FLOOR)
    "unchunked_floor_tokens": (
        (
            "vllm/engine/arg_utils.py",
            r"max\(\s*model_config\.max_model_len,\s*self\.(max_num_batched_tokens)",
        ),
        ("vllm/config/scheduler.py", r"max\(\s*self\.max_model_len,\s*(\w+(?:\.\w+)?)"),
        ("vllm/config.py", r"max\(\s*(?:self\.)?max_model_len,\s*(\d+)\)"),
        ("vllm/config.py", r"max\(\s*(?:self\.)?max_model_len,\s*(_?DEFAULT_MAX_NUM_BATCHED_TOKENS)\)"),
    ),
    # with chunked prefill (and the engine context LMI uses): the default token budget
    "chunked_default_tokens": (
        ("vllm/config/scheduler.py", r"DEFAULT_MAX_NUM_BATCHED_TOKENS: ClassVar\[int\] = (\d+)"),
        ("vllm/config/scheduler.py", r"^DEFAULT_MAX_NUM_BATCHED_TOKENS = (\d+)"),
        ("vllm/utils/__init__.py", r"^DEFAULT_MAX_NUM_BATCHED_TOKENS = (\d+)"),
        ("vllm/config.py", r"^_DEFAULT_MAX_NUM_BATCHED_TOKENS = (\d+)"),
        ("vllm/config.py", r"^\s+(?:self\.)?max_num_batched_tokens = (\d+)\s*$"),
    ),
    "block_size_default": (
        ("vllm/config/cache.py", r"DEFAULT_BLOCK_SIZE: ClassVar\[int\] = (\d+)"),
        ("vllm/platforms/cuda.py", r"cache_config\.block_size = (\d+)"),
        ("vllm/engine/arg_utils.py", r"^\s+block_size: int = (\d+)"),
    ),
    "cudagraph_budget_env_default": (
        ("vllm/envs.py", r"\"VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS\",\s*\"(\d)\""),
    ),
    "use_v1_env_default": (("vllm/envs.py", r"os\.getenv\(\"VLLM_USE_V1\",\s*\"(\d)\"\)"),),
    "v0_capture_batches": (("vllm/worker/model_runner.py", r"for i in range\(1, (\d+)\)\s*\]"),),
    "v0_capture_alignment": (("vllm/worker/model_runner.py", r"^_BATCH_SIZE_ALIGNMENT = (\d+)"),),
    # before latent attention, DeepSeek-V2 expands every head and pads it to a fixed head size
    "expanded_latent_head_size": (
        (
            "vllm/model_executor/models/deepseek_v2.py",
            r"self\.attn = Attention\(\s*self\.num_local_heads,\s*(\d+),",
        ),
    ),
    # the attention backend allocates its output, then copies the kernel's own output into it (both alive)
    "attention_output_copy": (
        ("vllm/attention/backends/flash_attn.py", r"^\s*(output)\[:num_prefill_tokens\] = out\s*$"),
        ("vllm/attention/backends/xformers.py", r"^\s*(output)\[:num_prefill_tokens\] = out\s*$"),
    ),
}


def github_url(version: str, path: str, line: int) -> str:
    """A public link to one line of vLLM at the release tag."""
    return f"https://github.com/vllm-project/vllm/blob/v{version}/{path}#L{line}"


def find(sources: dict[str, str], version: str, candidates: tuple[tuple[str, str], ...]) -> dict | None:
    """The first candidate (file, regex) that matches: value, evidence line and URL."""
    for path, pattern in candidates:
        text = sources.get(path)
        if text is None:
            continue
        match = re.search(pattern, text, flags=re.MULTILINE)
        if match:
            line = text.count("\n", 0, match.start()) + 1
            evidence = text.splitlines()[line - 1].strip()
            return {"value": match.group(1), "evidence": evidence, "source": github_url(version, path, line)}
    return None


def constant_value(sources: dict[str, str], name: str) -> int | None:
    """Resolve a constant name such as ``_DEFAULT_MAX_NUM_BATCHED_TOKENS`` used inside max(...)."""
    if name.isdigit():
        return int(name)
    bare = name.split(".")[-1]
    for text in sources.values():
        match = re.search(
            rf"^\s*{re.escape(bare)}(?::\s*ClassVar\[int\])?\s*=\s*(\d+)", text, flags=re.MULTILINE
        )
        if match:
            return int(match.group(1))
    return None


def function_body(text: str, names: tuple[str, ...]) -> tuple[str, int] | None:
    """The source of the first function among ``names`` and its first line number."""
    for name in names:
        match = re.search(rf"^(\s*)def {name}\(", text, flags=re.MULTILINE)
        if not match:
            continue
        indent = len(match.group(1))
        lines = text[match.start() :].splitlines()
        signature_end = next(index for index, line in enumerate(lines) if line.rstrip().endswith(":"))
        body = lines[: signature_end + 1]
        for line in lines[signature_end + 1 :]:
            if line.strip() and len(line) - len(line.lstrip()) <= indent:
                break
            body.append(line)
        return "\n".join(body), text.count("\n", 0, match.start()) + 1
    return None


def profiler_scheme(sources: dict[str, str], version: str, engine: str) -> dict:
    """Which accounting the default engine's worker uses (see PROFILER_MARKERS)."""
    path = V1_WORKER if engine == "v1" else V0_WORKER
    found = function_body(sources.get(path, ""), WORKER_FUNCTIONS)
    if found is None:
        raise SystemExit(f"vllm {version}: no profiling function in {path}")
    body, first_line = found
    for scheme, marker in PROFILER_MARKERS:
        match = re.search(marker, body)
        if match:
            line = first_line + body.count("\n", 0, match.start())
            evidence = body.splitlines()[line - first_line].strip()
            return {"value": scheme, "evidence": evidence, "source": github_url(version, path, line)}
    raise SystemExit(f"vllm {version}: unknown profiling scheme in {path}")


def default_engine(sources: dict[str, str], version: str) -> dict:
    """V1 where the V0 worker is gone or VLLM_USE_V1 defaults to 1, else V0."""
    if V0_WORKER not in sources:
        return {
            "value": "v1",
            "evidence": f"{V0_WORKER} is absent",
            "source": github_url(version, V1_WORKER, 1),
        }
    use_v1 = find(sources, version, FACTS["use_v1_env_default"])
    if use_v1 and use_v1["value"] == "1":
        return {**use_v1, "value": "v1"}
    evidence = use_v1 or {"evidence": f"{V1_WORKER} is absent", "source": github_url(version, V0_WORKER, 1)}
    return {**evidence, "value": "v0"}


LARGE_GPU_CONDITION = re.compile(
    r"^\s*if (?:device_memory >= (?P<gib>\d+) \* GiB_bytes|\"h100\" in device_name)(?P<rest>.*):\s*$",
    flags=re.MULTILINE,
)
CONTEXT_ENTRY = re.compile(r"UsageContext\.(\w+):\s*(\d+)")


def _context_tables(block: str, name: str) -> list[dict[str, int]]:
    """Each ``name = {UsageContext.X: n, ...}`` (or ``name = n``, the same for every context) in order."""
    tables = []
    for match in re.finditer(rf"{name}\s*=\s*(\{{[^}}]*\}}|\d+)", block):
        literal = match.group(1)
        if literal.isdigit():
            tables.append({"*": int(literal)})
        else:
            tables.append({context: int(value) for context, value in CONTEXT_ENTRY.findall(literal)})
    return tables


def usage_context_defaults(sources: dict[str, str], version: str) -> dict | None:
    """The V1 defaults of max_num_batched_tokens / max_num_seqs per usage context and GPU size.

    ``vllm serve`` (OPENAI_API_SERVER) and ``LLM(...)`` (LLM_CLASS) get them; an engine built with
    ``from_engine_args`` (ENGINE_CONTEXT, what LMI's handlers do) is not in the tables and keeps the
    scheduler's own default (``chunked_default_tokens``).
    """
    path = "vllm/engine/arg_utils.py"
    text = sources.get(path, "")
    condition = LARGE_GPU_CONDITION.search(text)
    if condition is None:
        return None
    block = text[condition.start() : condition.start() + 2500]
    tokens = _context_tables(block, "default_max_num_batched_tokens")
    seqs = _context_tables(block, "default_max_num_seqs")
    if len(tokens) < 2:
        return None
    rest = condition.group("rest")
    if condition.group("gib"):
        rule = {
            "min_memory_gib": int(condition.group("gib")),
            "excluded_names": re.findall(r'"(\w+)" not in device_name', rest),
        }
    else:
        rule = {"names": ["h100", *re.findall(r'or "(\w+)" in device_name', rest)]}

    def sized(index: int) -> dict:
        contexts = {}
        for context, value in tokens[index].items():
            entry = {"max_num_batched_tokens": value}
            if index < len(seqs):
                entry["max_num_seqs"] = seqs[index].get(context, seqs[index].get("*"))
            contexts[context] = entry
        return contexts

    line = text.count("\n", 0, condition.start()) + 1
    return {
        "value": {"large_gpu": rule, "large": sized(0), "other": sized(1)},
        "evidence": condition.group(0).strip(),
        "source": github_url(version, path, line),
    }


TORCH_REQUIREMENT = re.compile(r"^torch\s*(?:==|>=)\s*(\d+\.\d+\.\d+)\s*(?:;(?P<marker>.*))?$", re.MULTILINE)
REQUIREMENT_FILES = ("requirements-cuda.txt", "requirements/cuda.txt", "requirements.txt")
_nccl_cache: dict[str, dict | None] = {}


def torch_requirement(archive: Path, version: str) -> dict | None:
    """The torch release the vLLM release pins for CUDA on x86 (requirements files or wheel METADATA)."""
    texts: dict[str, str] = {}
    if archive.name.endswith(".whl"):
        with zipfile.ZipFile(archive) as zf:
            for name in zf.namelist():
                if name.endswith(".dist-info/METADATA"):
                    metadata = zf.read(name).decode("utf-8")
                    texts["METADATA"] = "\n".join(
                        line.removeprefix("Requires-Dist: ").replace(" ", "")
                        for line in metadata.splitlines()
                        if line.startswith("Requires-Dist: torch")
                    )
    else:
        with tarfile.open(archive) as tf:
            for member in tf:
                relative = member.name.split("/", 1)[-1]
                if member.isfile() and relative in REQUIREMENT_FILES:
                    handle = tf.extractfile(member)
                    assert handle is not None
                    texts[relative] = handle.read().decode("utf-8")
    for path in (*REQUIREMENT_FILES, "METADATA"):
        for match in TORCH_REQUIREMENT.finditer(texts.get(path, "")):
            if re.search(r"==\s*['\"]aarch64", match.group("marker") or ""):
                continue  # the ARM build's pin
            line = texts[path].count("\n", 0, match.start()) + 1
            source = (
                github_url(version, path, line)
                if path != "METADATA"
                else f"https://pypi.org/project/vllm/{version}/"
            )
            return {"value": match.group(1), "evidence": match.group(0).strip(), "source": source}
    return None


def nccl_of_torch(torch_version: str, index_url: str) -> dict | None:
    """The NCCL release a torch wheel for Linux x86 requires (its PEP 658 metadata on the index)."""
    if torch_version in _nccl_cache:
        return _nccl_cache[torch_version]
    request = urllib.request.Request(
        index_url.rstrip("/") + "/torch/", headers={"Accept": "application/vnd.pypi.simple.v1+json"}
    )
    with urllib.request.urlopen(request, timeout=120) as response:
        files = json.load(response)["files"]
    found = None
    for entry in files:
        name = entry["filename"]
        if not (name.startswith(f"torch-{torch_version}-") and "linux" in name and "x86_64" in name):
            continue
        try:
            with urllib.request.urlopen(entry["url"] + ".metadata", timeout=120) as response:
                metadata = response.read().decode("utf-8")
        except OSError:
            continue
        match = re.search(
            r"^Requires-Dist: nvidia-nccl-cu\d+ ?\(?==\s*([\d.]+)\)?.*$", metadata, re.MULTILINE
        )
        if match:
            found = {
                "value": match.group(1),
                "evidence": match.group(0).strip(),
                "source": entry["url"] + ".metadata",
            }
            break
    _nccl_cache[torch_version] = found
    return found


def communicators(sources: dict[str, str], version: str) -> dict:
    """How many NCCL communicators a TP worker opens: its TP group, the default group when it is warmed up
    (0.2-0.4), and a second TP communicator (CuPy 0.3, PyNccl 0.4+) for CUDA graphs."""
    # where the TP group's own communicators are made first; then any file
    tp_files = ("vllm/distributed/", "vllm/model_executor/parallel_utils/", "vllm/worker/")
    ordered = tuple(
        sorted(sources, key=lambda path: (not path.startswith(tp_files), "kv_transfer" in path, path))
    )
    markers = (
        ("the default group, warmed up", (V0_WORKER,), "torch.distributed.all_reduce(torch.zeros(1).cuda())"),
        ("a second TP communicator", ordered, "cupy_utils.init_process_group"),
        ("a second TP communicator", ordered, "pynccl_utils.init_process_group"),
        ("a second TP communicator", ordered, "PyNcclCommunicator("),
    )
    found: dict[str, tuple[str, str, int]] = {}
    for what, paths, needle in markers:
        for path in paths:
            at = sources.get(path, "").find(needle) if path.startswith("vllm/") else -1
            if at >= 0 and what not in found:
                found[what] = (needle, path, sources[path].count("\n", 0, at) + 1)
                break
    if not found:
        return {"value": 1, "evidence": "the TP group only", "source": github_url(version, V0_WORKER, 1)}
    _, first_path, first_line = next(iter(found.values()))
    evidence = "the TP group, " + ", ".join(f"{what} ({needle})" for what, (needle, _, _) in found.items())
    return {
        "value": 1 + len(found),
        "evidence": evidence,
        "source": github_url(version, first_path, first_line),
    }


def latent_attention(sources: dict[str, str], version: str) -> dict | None:
    """Whether the release caches DeepSeek's multi-head latent attention compressed (ModelConfig.use_mla)."""
    for path in sorted(sources):
        match = re.search(r"^\s*def use_mla\(self\)", sources[path], flags=re.MULTILINE)
        if match:
            line = sources[path].count("\n", 0, match.start()) + 1
            return {
                "value": True,
                "evidence": match.group(0).strip(),
                "source": github_url(version, path, line),
            }
    return None


def checkpoint_kv_cache_dtypes(sources: dict[str, str], version: str) -> dict | None:
    """The KV cache dtypes ``kv_cache_dtype=auto`` takes from a ModelOpt checkpoint's
    ``kv_cache_quant_algo`` (``MODELOPT_TO_VLLM_KV_CACHE_DTYPE_MAP``), when the engine arguments
    resolve ``auto`` through ``resolve_kv_cache_dtype_string`` (vLLM 0.14+; before, ``auto`` is the
    model's dtype whatever the checkpoint says)."""
    call = find(sources, version, (("vllm/engine/arg_utils.py", r"(resolve_kv_cache_dtype_string)\("),))
    if call is None:
        return None
    path = "vllm/utils/torch_utils.py"
    tree = ast.parse(sources[path])
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if any(getattr(target, "id", None) == "MODELOPT_TO_VLLM_KV_CACHE_DTYPE_MAP" for target in targets):
            mapping = ast.literal_eval(node.value)
            return {
                "value": {str(key): str(value) for key, value in sorted(mapping.items())},
                "evidence": call["evidence"],
                "source": f"{call['source']} {github_url(version, path, node.lineno)}",
            }
    raise SystemExit(
        f"vllm {version}: resolve_kv_cache_dtype_string is called but the ModelOpt map is not found"
    )


def facts_for(version: str, sources: dict[str, str]) -> dict:
    """Every fact of one version, each with value, evidence and source."""
    engine = default_engine(sources, version)
    result: dict = {"lmi_image": VERSIONS.get(version), "engine": engine}
    result["profiler"] = profiler_scheme(sources, version, engine["value"])
    for name in ("long_context_threshold", "chunked_default_tokens", "block_size_default"):
        fact = find(sources, version, FACTS[name])
        if fact is not None:
            fact["value"] = int(fact["value"])
        result[name] = fact
    floor = find(sources, version, FACTS["unchunked_floor_tokens"])
    if floor is not None and floor["value"] == "max_num_batched_tokens":
        # V1 (0.11+): max(max_model_len, the default token budget) when chunked prefill is off
        floor["value"] = (
            result["chunked_default_tokens"]["value"] if result["chunked_default_tokens"] else None
        )
    elif floor is not None:
        floor["value"] = constant_value(sources, floor["value"])
    result["unchunked_floor_tokens"] = floor
    env = find(sources, version, FACTS["cudagraph_budget_env_default"])
    result["cudagraphs_in_budget"] = {**env, "value": env["value"] == "1"} if env else None
    batches = find(sources, version, FACTS["v0_capture_batches"])
    alignment = find(sources, version, FACTS["v0_capture_alignment"])
    if engine["value"] == "v0" and batches and alignment:
        largest = int(alignment["value"]) * (int(batches["value"]) - 1)
        result["largest_cudagraph_batch"] = {**batches, "value": largest}
    else:
        result["largest_cudagraph_batch"] = None
    if result["unchunked_floor_tokens"] is None or result["block_size_default"] is None:
        raise SystemExit(f"vllm {version}: default max_num_batched_tokens or block size not found")
    result["mla_kv_cache"] = latent_attention(sources, version)
    padded = find(sources, version, FACTS["expanded_latent_head_size"])
    result["expanded_latent_head_size"] = {**padded, "value": int(padded["value"])} if padded else None
    copy = find(sources, version, FACTS["attention_output_copy"])
    result["attention_output_copy"] = {**copy, "value": True} if copy else None
    result["usage_context_defaults"] = usage_context_defaults(sources, version)
    result["nccl_communicators"] = communicators(sources, version)
    result["checkpoint_kv_cache_dtypes"] = checkpoint_kv_cache_dtypes(sources, version)
    if "enable_chunked_prefill" not in sources.get("vllm/engine/arg_utils.py", ""):
        result["chunked_default_tokens"] = None  # no chunked prefill in this release
    return result


def read_sources(archive: Path) -> dict[str, str]:
    """The Python files of an sdist or wheel, by path inside the vllm package."""
    return engine_args.read_python_sources(archive)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("versions", nargs="*", default=list(VERSIONS))
    parser.add_argument("--cache-dir", help="where the sdists are kept between runs")
    parser.add_argument("--index-url", default=engine_args.DEFAULT_INDEX)
    parser.add_argument("--output", default=str(DATA_FILE))
    args = parser.parse_args(argv)
    cache = Path(args.cache_dir) if args.cache_dir else Path(tempfile.mkdtemp(prefix="vllm-memory-"))
    cache.mkdir(parents=True, exist_ok=True)
    output = Path(args.output)
    document = json.loads(output.read_text()) if output.exists() else {}
    versions = dict(document.get("versions", {}))
    for version in args.versions:
        engine_args.log(f"vllm {version}")
        archive = engine_args.obtain(version, cache, args.index_url, False, "x86_64")
        if archive is None:
            raise SystemExit(f"vllm {version}: no archive")
        facts = facts_for(version, read_sources(archive))
        torch = torch_requirement(archive, version)
        facts["torch"] = torch
        facts["nccl"] = nccl_of_torch(torch["value"], args.index_url) if torch else None
        versions[version] = facts
    document["versions"] = {key: versions[key] for key in sorted(versions, key=engine_args.version_key)}
    output.write_text(json.dumps(document, indent=2, sort_keys=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
