"""Every ``bayes-slr`` command the README and the documents show is one the command line accepts
as written: it parses and its options validate (nothing is run; the examples' numbers are
checked by the tests of each command). A renamed flag or a changed range breaks this test,
not a reader's first try."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from bayes_slr.cli.flags import given_options
from bayes_slr.cli.main import build_parser
from bayes_slr.experiments import EXPERIMENTS

ROOT = Path(__file__).parent.parent
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
NEEDS_A_FILE = ("--data", "--from", "--claims")
"""Options whose validation reads a file the example made before (checked by their own tests)."""


def _documented_commands() -> list[tuple[str, str]]:
    found = []
    for document in DOCUMENTS:
        for block in re.findall(r"```[a-z]*\n(.*?)```", document.read_text(), flags=re.S):
            for line in block.replace("\\\n", " ").splitlines():  # a continued line is one
                match = re.match(r"^(?:\$ )?(?:\.venv/bin/)?bayes-slr (.*)$", line.strip())
                if match:
                    found.append((document.name, match[1].split(" #")[0].strip()))
    return found


COMMANDS = _documented_commands()


def test_the_documents_show_commands():
    assert len(COMMANDS) >= 10


@pytest.mark.parametrize(("document", "command"), COMMANDS, ids=[c for _, c in COMMANDS])
def test_a_documented_command_parses_and_validates(document, command):
    parser, flags = build_parser()
    argv = shlex.split(command)
    args = parser.parse_args(argv)
    if any(flag in argv for flag in NEEDS_A_FILE):
        return
    EXPERIMENTS.get(args.command).options_type(**given_options(args, flags[args.command]))
