"""A model's config file is read and checked while planning, and refused in one line."""
import os

import pytest

from conftest import BROKEN_MODEL_CONFIGS, REPO
from duel.host.plan import config_keys, model_files


@pytest.mark.unit
@pytest.mark.parametrize("case", sorted(BROKEN_MODEL_CONFIGS))
def test_a_broken_model_config_is_refused_in_one_line_naming_the_file(tmp_path, case):
    text, words = BROKEN_MODEL_CONFIGS[case]
    (tmp_path / "broken.json").write_text(text)
    with pytest.raises(config_keys.PlanError) as error:
        model_files.check_models(["broken"], str(tmp_path))
    message = str(error.value)
    assert message.startswith(str(tmp_path / "broken.json")) and words in message, message
    assert len(message.splitlines()) == 1


@pytest.mark.unit
def test_a_models_dir_that_does_not_exist_is_refused_in_one_line(tmp_path):
    with pytest.raises(config_keys.PlanError, match="^config key 'models_dir': %s is not a folder$"
                       % (tmp_path / "nowhere")):
        model_files.check_models(["gpt2"], str(tmp_path / "nowhere"))


@pytest.mark.unit
def test_every_shipped_model_config_is_read_by_planning():
    names = sorted(name[:-5] for name in os.listdir(os.path.join(REPO, "config", "models")))
    specs = model_files.check_models(names, os.path.join(REPO, "config", "models"))
    assert sorted(specs) == names and len(names) == 12
    assert all(model_files.parameters(spec) > 1e7 for spec in specs.values())
