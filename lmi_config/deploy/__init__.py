"""``lmi-config deploy``: from a validated spec to a SageMaker endpoint, with boto3.

- :mod:`.build` renders the spec (as ``render`` does, with the full lint) and builds the plan:
  the image (:mod:`.image_choice`), the timeouts and volume (:mod:`.sizing`), every SageMaker
  limit checked before the first call (:mod:`.limits`);
- :mod:`.run` makes the calls (:mod:`.aws`), waits with a progress display and reads the
  CloudWatch log on failure (:mod:`.progress`), and removes what a failed or interrupted run
  created (:mod:`.cleanup`; Ctrl-C, SIGTERM and SIGHUP: :mod:`.interrupt`);
- :mod:`.deletion` decides what ``--delete`` and ``--update`` remove — only what lmi-config made
  (:mod:`.tags`) and nothing else uses — and :mod:`.s3_purge` which objects ``--purge-s3`` removes;
  :mod:`.tags` also refuses duplicate, reserved and credential tags;
- :mod:`.report` prints plans and outcomes; :mod:`.sdk` is the optional SageMaker SDK (role
  discovery, ``images --refresh``).

boto3 is imported only when AWS is called; the SageMaker SDK only by :mod:`.sdk`.
"""

from __future__ import annotations

from lmi_config.deploy.build import build_plan, resolve_region
from lmi_config.deploy.plan import ApiCall, DeployPlan, DeployRequest
from lmi_config.deploy.run import Outcome, execute
from lmi_config.deploy.sizing import SizingOverrides

__all__ = [
    "ApiCall",
    "DeployPlan",
    "DeployRequest",
    "Outcome",
    "SizingOverrides",
    "build_plan",
    "execute",
    "resolve_region",
]
