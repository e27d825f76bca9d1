"""Every section citation in the code resolves to a numbered heading of a document inside the repository.

`sfbench_jax/` cites the benchmark protocol (`docs/protocol.md`) as "spec N.M" or "protocol N.M"; `kernels/` cites
the PHM kernel definitions (`docs/phm_reference.md`) as "spec N.M", "spec section N" or "phm-reference N.M". A range
("spec 1.3-1.5") must resolve at both ends.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CITATION = re.compile(r"\b(spec|protocol|phm-reference)(?: section)? (\d+(?:\.\d+)*)(?:-(\d+(?:\.\d+)*))?")
HEADING = re.compile(r"^#+ (\d+(?:\.\d+)*)\.? ", re.MULTILINE)
#: Source folder -> the document its citations point into ("phm-reference N" always means docs/phm_reference.md).
CITED_DOCUMENTS = {"sfbench_jax": "docs/protocol.md", "kernels": "docs/phm_reference.md"}
PHM_REFERENCE = "docs/phm_reference.md"


def numbered_sections(document: Path) -> set[str]:
    return set(HEADING.findall(document.read_text(encoding="utf-8")))


def citations(folder: Path) -> list[tuple[str, int, str, str]]:
    """(file, line, section, cited name) for every cited section under `folder` (Python and YAML files)."""
    found = []
    for path in sorted([*folder.rglob("*.py"), *folder.rglob("*.yaml")]):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            for match in CITATION.finditer(line):
                name, *sections = match.groups()
                found.extend((str(path.relative_to(REPO)), number, section, name) for section in sections if section)
    return found


def test_the_heading_pattern_reads_numbered_headings() -> None:
    text = "# Title\n## 1. Data\n### 1.2 The Beijing derivation\n#### not numbered\n"
    assert HEADING.findall(text) == ["1", "1.2"]


def test_the_citation_pattern_reads_both_spellings_and_ranges() -> None:
    line = "see spec 1.3-1.5, protocol 6.2 and spec section 4; phm-reference 5.7"
    assert [g for m in CITATION.finditer(line) for g in m.groups()[1:] if g] == ["1.3", "1.5", "6.2", "4", "5.7"]


@pytest.mark.parametrize("folder", sorted(CITED_DOCUMENTS))
def test_every_citation_resolves(folder: str) -> None:
    sections = {name: numbered_sections(REPO / name) for name in {CITED_DOCUMENTS[folder], PHM_REFERENCE}}
    cited = citations(REPO / folder)
    assert cited, f"no citations found under {folder}/ (did the pattern break?)"
    unresolved = [f"{path}:{line}: {section}" for path, line, section, name in cited
                  if section not in sections[PHM_REFERENCE if name == "phm-reference" else CITED_DOCUMENTS[folder]]]
    assert not unresolved, f"citations with no heading in {CITED_DOCUMENTS[folder]}:\n" + "\n".join(unresolved)
