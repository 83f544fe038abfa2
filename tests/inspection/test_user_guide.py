"""The code of doc/user_guide/influence.rst runs and says what the text says."""

import re
from pathlib import Path

import numpy as np
import pytest

GUIDE = Path(__file__).parents[2] / "doc" / "user_guide" / "influence.rst"


def _code_blocks(text):
    blocks = re.findall(r"\.\. code-block:: python\n\n((?:    .*\n|\n)+)", text)
    return "\n".join("\n".join(line[4:] for line in b.splitlines()) for b in blocks)


def test_guide_states_it_is_an_analysis_tool():
    text = GUIDE.read_text()
    assert "is an analysis tool, not a" in text and "private release" in text
    assert "nothing it outputs is differentially private" in text


@pytest.mark.slow  # loads Adult and retrains 20 times (~20 s on a loaded machine)
def test_guide_example_runs_and_matches_its_text():
    namespace = {}
    exec(compile(_code_blocks(GUIDE.read_text()), str(GUIDE), "exec"), namespace)
    label, feature = namespace["label_cost"], namespace["feature_cost"]
    measured = namespace["measured"]
    assert label.shape == (2, 4) and measured.shape == (2, 2)
    # falls with epsilon, larger for the larger group, ranked as retraining ranks
    assert np.all(np.diff(label, axis=1) < 0)
    assert np.all(label[0] > label[1]) and np.all(measured[0] > measured[1])
    # the overshoot the text describes, and feature RR far cheaper than label RR
    assert label[0, 0] > 3 * measured[0, 0]
    assert np.all(np.abs(feature) < 1e-3)
