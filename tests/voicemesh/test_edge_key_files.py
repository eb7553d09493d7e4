"""The edge's keys from mounted files (a Kubernetes Secret, the local state's 0600 files)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from voicemesh.cli.edge import keys_from_file
from voicemesh.cli.main import cli


def test_one_key_per_line_with_comments_and_commas(tmp_path: Path) -> None:
    path = tmp_path / "keys"
    path.write_text("# callers\nvm-one\n\n  vm-two , vm-three\nvm-one  # again\n")
    assert keys_from_file(str(path), "API keys") == ("vm-one", "vm-two", "vm-three")


@pytest.mark.parametrize(
    ("content", "message"), [(None, "cannot read the API keys file"), ("# none\n\n", "holds no key")]
)
def test_a_missing_or_empty_file_stops_the_edge_with_a_reason(
    tmp_path: Path, content: str | None, message: str
) -> None:
    path = tmp_path / "keys"
    if content is not None:
        path.write_text(content)
    result = CliRunner().invoke(
        cli, ["edge", "serve", "--region", "http://127.0.0.1:9", "--api-keys-file", str(path)]
    )
    assert result.exit_code == 1
    assert message in result.output
