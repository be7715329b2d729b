"""The GPU architectures an image's vLLM is built for (``data/vllm_cuda_archs.json``, generated from
vLLM's CMakeLists.txt), chosen by the CUDA version of the image (``data/images.json``)."""

from functools import cache
from typing import TYPE_CHECKING, NamedTuple

from lmi_config.knowledge import load_data, version_tuple
from lmi_config.knowledge.images import images

if TYPE_CHECKING:
    from lmi_config.knowledge import Release


class BuildArchs(NamedTuple):
    """Compute capabilities (75 = 7.5) vLLM's kernels are built for, and where that is stated."""

    capabilities: tuple[int, ...]
    cuda: str  # the image's CUDA, e.g. 13.0
    source: str

    @property
    def oldest(self) -> int:
        return min(self.capabilities)

    @property
    def newest(self) -> int:
        return max(self.capabilities)

    def runs_on(self, capability: int) -> bool:
        """Whether code built for these architectures runs on a GPU of this compute capability: code for
        X.y runs on X.z with z >= y (the same major architecture), never on another major one."""
        return any(built // 10 == capability // 10 and built <= capability for built in self.capabilities)


def _capability(text: str) -> int:
    major, _, minor = text.partition(".")
    return int(major) * 10 + int(minor.rstrip("af") or 0)


def image_cuda(release: "Release") -> str | None:
    """The CUDA version of the djl-lmi image of this release (``cu130`` → ``13.0``), when known."""
    for image in images():
        same = (
            image.framework == "djl-lmi"
            and image.djl_version == release.djl
            and image.lmi_version == release.lmi
        )
        tag = image.cuda or ""
        if same and tag.startswith("cu") and tag[2:].isdigit():
            return f"{tag[2:-1]}.{tag[-1]}"
    return None


@cache
def vllm_build_archs(vllm_version: str | None, cuda: str | None) -> BuildArchs | None:
    """The first CMakeLists.txt branch whose least CUDA version the image's CUDA meets; None where the
    data has no such list (a release read from a wheel, an unknown version or CUDA)."""
    if vllm_version is None or cuda is None:
        return None
    row = load_data("vllm_cuda_archs.json")["versions"].get(vllm_version)
    if row is None or not row["branches"]:
        return None
    for branch in row["branches"]:
        if branch["min_cuda"] is None or version_tuple(cuda) >= version_tuple(branch["min_cuda"]):
            capabilities = tuple(_capability(arch) for arch in branch["archs"])
            return BuildArchs(capabilities, cuda, branch["source"])
    return None


def newest_release_built_for(capability: int) -> "Release | None":
    """The newest LMI release whose image's vLLM is known to be built for this compute capability."""
    from lmi_config.knowledge import releases

    fitting = [
        release
        for release in releases()
        if (built := vllm_build_archs(release.vllm, image_cuda(release))) is not None
        and built.runs_on(capability)
    ]
    return max(fitting, key=lambda release: release.order, default=None)
