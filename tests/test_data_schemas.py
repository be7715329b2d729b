"""Every data file has a schema and follows it: a typo or a missing source fails here."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from lmi_config.knowledge import DATA_DIR
from lmi_config.knowledge.nxd_check_schemas import NXD_SCHEMAS
from lmi_config.knowledge.schemas import SCHEMAS, schema_for

FILES = sorted(path.name for path in DATA_DIR.glob("*.json"))
# the catalogues of engines' start-up checks read from their repositories (not yet in SCHEMAS)
REPOSITORY_CHECK_SCHEMAS = {name: model for name, model in NXD_SCHEMAS.items() if name not in SCHEMAS}


def test_every_data_file_has_a_schema() -> None:
    assert sorted({**SCHEMAS, **REPOSITORY_CHECK_SCHEMAS}) == FILES


@pytest.mark.parametrize("name", FILES)
def test_data_file_follows_its_schema(name: str) -> None:
    document = json.loads((DATA_DIR / name).read_text(encoding="utf-8"))
    try:
        (REPOSITORY_CHECK_SCHEMAS.get(name) or schema_for(name)).model_validate(document)
    except ValidationError as error:
        pytest.fail(f"{name}: {error}")


def test_a_schema_refuses_an_unknown_key_and_a_missing_source() -> None:
    document = json.loads((DATA_DIR / "tp_rules.json").read_text(encoding="utf-8"))
    document["rules"][0]["degres"] = [1]  # a typo
    with pytest.raises(ValidationError, match="degres"):
        schema_for("tp_rules.json").model_validate(document)
    document = json.loads((DATA_DIR / "conflicts.json").read_text(encoding="utf-8"))
    del document["conflicts"][0]["source"]
    with pytest.raises(ValidationError, match="source"):
        schema_for("conflicts.json").model_validate(document)
