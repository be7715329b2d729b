"""The cost ``search --on sagemaker`` reports while it watches: what SageMaker bills an ended job
(``BillableTimeInSeconds``) where it says, the elapsed time otherwise — and the progress line says
which. Against moto's real HTTP server (``tests/search_jobs_harness.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from search_jobs_harness import Search, aws, end, named, server

from lmi_config.knowledge.planning import on_demand_price

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="the fake machines run real processes")
__all__ = ["aws", "server"]  # fixtures


def progress_line(stderr: str) -> str:
    (line,) = [line for line in stderr.splitlines() if line.startswith("jobs: ")]
    return line


def test_the_estimated_cost_is_the_billable_time_where_sagemaker_gives_it_and_says_so(
    aws: dict[str, Any], server: str, tmp_path: Path
) -> None:
    search = Search(server, tmp_path)
    assert search.coordinate("--yes", "--no-wait").returncode == 0
    price = on_demand_price("trn1.32xlarge")
    assert price is not None  # the figure below is a price times the billed hours
    # moto's jobs end the moment they are created: their elapsed time is nothing, so any cost is billed time
    end(named(aws, "32xlarge-2of2"), "Completed", billable_seconds=2 * 3600)
    end(named(aws, "32xlarge-1of2"), "Failed", "AlgorithmError: the shard stopped")  # no billable time given
    watched = search.coordinate("--no-wait")
    assert watched.returncode == 0, watched.stderr
    line = progress_line(watched.stderr)
    assert f"estimated cost so far ${2 * price.usd_per_hour:,.2f} of at most" in line
    assert line.endswith(
        "(from SageMaker's billable time of 1 ended job(s) and the elapsed time of 2 job(s))"
    )
    end(named(aws, "trn1-2xlarge-1of1"), "Completed")
    again = search.coordinate("--no-wait")
    assert again.returncode == 3  # the failed job, not retried
    assert f"estimated cost so far ${2 * price.usd_per_hour:,.2f} of at most" in progress_line(again.stderr)
