"""Which optimum-neuron exports the search's trials: the version installed where ``--python`` runs, so the
judge reads that exporter's registry (``knowledge/engine_support.py``) rather than guessing."""

from __future__ import annotations

import shlex

from lmi_config.knowledge.engine_support import ANY_OPTIMUM_NEURON, optimum_export_registry

# the distribution's own metadata: importing optimum.neuron would take seconds and load the Neuron SDK
PROBE = "import importlib.metadata as metadata; print(metadata.version('optimum-neuron'))"
PROBE_SECONDS = 60


def installed_optimum_neuron(python: str) -> str | None:
    """The optimum-neuron version ``python`` has installed; None when it cannot tell (not installed as a
    distribution, the interpreter does not run: the preflight says so before any trial)."""
    from lmi_config.search.system import run_captured

    try:
        completed = run_captured([*shlex.split(python), "-c", PROBE], PROBE_SECONDS)
    except (OSError, ValueError):
        return None
    lines = completed.stdout.strip().splitlines()
    if completed.problem(python, PROBE_SECONDS) is not None or completed.returncode != 0 or not lines:
        return None
    return lines[-1].strip() or None


def export_registry_version(python: str) -> str:
    """The version whose registry judges the search's model: the installed one where lmi-config has its
    registry, else any release it knows (only a model type none of them exports is refused)."""
    installed = installed_optimum_neuron(python)
    if installed is not None and optimum_export_registry(installed) is not None:
        return installed
    return ANY_OPTIMUM_NEURON
