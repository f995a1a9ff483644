"""Diagnosis from the mutation catalogue: a submission's failing tests named as the mistake they look like.

Every catalogued wrong implementation (autograder/mutants/) has a signature: the test cells it fails under the real
grader (`make mutation` writes them to autograder/mutants/signatures.json, next to docs/mutation.md; the class run
of tests/course/test_mutation.py checks both against what it grades). When a submission fails exactly the tests of
one or more catalogued mistakes, `make grade`'s feedback and the checking service (`make check-service`) name them
in the catalogue's own words (the mutants' `why`), never a test's content. The control (the solutions) fails no
test, and no signature is empty, so a correct submission gets no diagnosis.

    python -m autograder.diagnosis 04_masking test-counts     # what failing test-counts alone looks like
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SIGNATURES = ROOT / "autograder" / "mutants" / "signatures.json"


def load_signatures(path: Path = SIGNATURES) -> dict[str, dict[str, list[str]]]:
    """{chapter: {mutant name: the grade_ids of the test cells it fails}}."""
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def write_signatures(signatures: dict[str, dict[str, list[str]]], path: Path = SIGNATURES) -> None:
    data = {ch: {name: sorted(failed) for name, failed in sorted(mutants.items())}
            for ch, mutants in sorted(signatures.items())}
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def table(chapters: list[str] | None = None, signatures: dict | None = None) -> dict[str, list[dict]]:
    """{chapter: [{"failed": [grade_ids], "mistakes": [why, ...]}]}: the catalogue grouped by signature, what the
    grader and the service read (`minibert_course.nbgrader_ext.diagnose`)."""
    from autograder.mutation import load_catalogue

    signatures = load_signatures() if signatures is None else signatures
    out = {}
    for chapter in chapters or sorted(signatures):
        groups: dict[tuple[str, ...], list[str]] = {}
        for mutant in load_catalogue(chapter):
            failed = signatures.get(chapter, {}).get(mutant.name)
            if failed:  # a mutant not graded yet has no signature: it diagnoses nothing
                groups.setdefault(tuple(sorted(failed)), []).append(mutant.why)
        out[chapter] = [{"failed": list(k), "mistakes": v} for k, v in groups.items()]
    return out


def main(argv: list[str] | None = None) -> int:
    from minibert_course.nbgrader_ext import diagnose

    args = sys.argv[1:] if argv is None else argv
    if not args:
        print(__doc__.strip().splitlines()[-1].strip())
        return 2
    chapter, failed = args[0], set(args[1:])
    found = diagnose(table([chapter]).get(chapter, []), failed)
    print("\n".join(found) if found else "no catalogued mistake fails exactly these tests")
    return 0


if __name__ == "__main__":
    sys.exit(main())
