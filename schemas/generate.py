"""Write the JSON Schema of every contract to schemas/json/ (`make schemas`).
tests/test_schemas.py fails when the committed files differ from what this produces."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from schemas.matrix import MatrixSpec, Submission
from schemas.report import ExperimentReport
from schemas.spec import ExperimentSpec

OUT_DIR = Path(__file__).parent / "json"


def documents() -> dict[str, dict[str, Any]]:
    docs = {
        "experiment-spec.schema.json": ExperimentSpec.model_json_schema(),
        "matrix-spec.schema.json": MatrixSpec.model_json_schema(),
        "submission.schema.json": TypeAdapter(Submission).json_schema(),
        "experiment-report.schema.json": ExperimentReport.model_json_schema(),
    }
    for name, doc in docs.items():
        doc["$schema"] = "https://json-schema.org/draft/2020-12/schema"
        doc["$id"] = f"https://ccbench.dev/schemas/{name}"
    return docs


def render(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def main() -> int:
    OUT_DIR.mkdir(exist_ok=True)
    for name, doc in documents().items():
        (OUT_DIR / name).write_text(render(doc))
        print(f"wrote schemas/json/{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
