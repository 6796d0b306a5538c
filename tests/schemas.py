"""The published JSON Schemas of verdict.json and meta.json (docs/schemas/), for tests to validate against."""
import json
from pathlib import Path

import jsonschema

SCHEMAS = Path(__file__).resolve().parent.parent / "docs" / "schemas"


def validate(document: dict, name: str) -> None:
    """Raise jsonschema.ValidationError if `document` breaks docs/schemas/<name>.schema.json."""
    schema = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(document)


def validate_run(run_dir: Path) -> None:
    validate(json.loads((Path(run_dir) / "meta.json").read_text()), "meta")
    validate(json.loads((Path(run_dir) / "verdict.json").read_text()), "verdict")
